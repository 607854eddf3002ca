import { defineService } from '#shared/services.ts';
import { SettingsService } from '#shared/settings/service.ts';

export const settings = defineService(
  { adapters: ['settingsStore', 'sealer'] },
  (c) => new SettingsService(c.adapter('settingsStore'), c.adapter('sealer')),
);
