import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

export const sealer: Builder<'sealer'> = () =>
  new KmsSealer(requireEnv('SECRETS_KEY_ID', 'the KMS key that seals secrets'));
