import { audit } from '#shared/services/audit.ts';
import { settings } from '#shared/services/settings.ts';
import { saveSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditStore } from '#shared/wiring/aws/accounts.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(saveSettings, { settingsStore, sealer, auditStore }, { settings, audit });
