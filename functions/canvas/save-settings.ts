import { audit } from '#shared/services/audit.ts';
import { settings } from '#shared/services/settings.ts';
import { canvasSaveSettings } from '#shared/settings/canvas-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditStore } from '#shared/wiring/aws/accounts.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(canvasSaveSettings, { settingsStore, sealer, auditStore }, { settings, audit });
