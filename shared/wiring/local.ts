import { join } from 'node:path';
import { ApiKeys } from '#shared/auth/api-keys.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import { CursorCodec } from '#shared/http/cursor.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import type { Services } from '#shared/services.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { SettingsService } from '#shared/settings/service.ts';

export interface LocalOptions {
  /** Where local state lives (`.data/` by default): the sealing key, sandboxes' workspaces. */
  dataDir: string;
}

/** The local adapters: the same DynamoDB stores (on dynalite), a key-file sealer. */
export function localServices(options: LocalOptions): Services {
  const sealer = LocalSealer.fromKeyFile(join(options.dataDir, 'secret.key'));
  return {
    apiKeys: new ApiKeys(new DynamoKeyStore()),
    settings: new SettingsService(new DynamoSettingsStore(), sealer),
    cursors: new CursorCodec(systemKey('cursor', sealer)),
  };
}
