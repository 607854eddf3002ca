import { audit } from '#shared/services/audit.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { settings } from '#shared/services/settings.ts';
import { saveSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditStore } from '#shared/wiring/aws/accounts.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { platformModels } from '#shared/wiring/aws/llm.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(
  saveSettings,
  { settingsStore, sealer, auditStore, plans, platformModels },
  { settings, audit, platformLlms },
);
