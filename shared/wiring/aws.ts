import { ApiKeys } from '#shared/auth/api-keys.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import { CursorCodec } from '#shared/http/cursor.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler } from '#shared/http/wrapper.ts';
import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import type { Services } from '#shared/services.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { SettingsService } from '#shared/settings/service.ts';
import { lazy, requireEnv } from '#shared/wiring/lazy.ts';

let services: Services | undefined;

/** The AWS adapters, each built on first use and kept for the container's life. */
export function awsServices(): Services {
  if (!services) {
    let sealer: KmsSealer | undefined;
    const kms = () => (sealer ??= new KmsSealer(requireEnv('SECRETS_KEY_ID', 'the KMS key that seals secrets')));
    services = lazy<Services>({
      apiKeys: () => new ApiKeys(new DynamoKeyStore()),
      settings: () => new SettingsService(new DynamoSettingsStore(), kms()),
      cursors: () => new CursorCodec(systemKey('cursor', kms())),
    });
  }
  return services;
}

export const awsHandler = (op: Operation) => lambdaHandler(op, awsServices);
