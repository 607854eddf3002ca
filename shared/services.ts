import type { ApiKeys } from '#shared/auth/api-keys.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import type { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';
import type { SettingsService } from '#shared/settings/service.ts';

/**
 * What handlers may use. Built once per container by a wiring file (`wiring/aws.ts` or
 * `wiring/local.ts`), which is the only place that picks adapters.
 */
export interface Services {
  apiKeys: ApiKeys;
  settings: SettingsService;
  cursors: CursorCodec;
  sandboxes: SandboxService;
  sandboxSpecs: SandboxSpecService;
}
