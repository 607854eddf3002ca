import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const settingsStore: Builder<'settingsStore'> = () => new DynamoSettingsStore();
