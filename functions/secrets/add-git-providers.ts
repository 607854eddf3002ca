import { settings } from '#shared/services/settings.ts';
import { addGitProviders } from '#shared/settings/secrets-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(addGitProviders, { settingsStore, sealer }, { settings });
