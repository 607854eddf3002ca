import type { ServiceFactory } from '#shared/services.ts';
import { SettingsService } from '#shared/settings/service.ts';

export const settings: ServiceFactory<SettingsService> = (c) =>
  new SettingsService(c.adapter('settingsStore'), c.adapter('sealer'));
