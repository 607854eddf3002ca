import { z } from 'zod';
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

/** The environment the CDK app gives every function; checked once, failing with the key's name. */
const awsEnv = z.object({
  SECRETS_KEY_ID: z.string().min(1, 'SECRETS_KEY_ID (the KMS key for sealed secrets) is required'),
});

let services: Services | undefined;

/** The AWS adapters, built on first use and kept for the container's life. */
export function awsServices(): Services {
  if (!services) {
    const env = awsEnv.parse(process.env);
    const sealer = new KmsSealer(env.SECRETS_KEY_ID);
    services = {
      apiKeys: new ApiKeys(new DynamoKeyStore()),
      settings: new SettingsService(new DynamoSettingsStore(), sealer),
      cursors: new CursorCodec(systemKey('cursor', sealer)),
    };
  }
  return services;
}

export const awsHandler = (op: Operation) => lambdaHandler(op, awsServices);
