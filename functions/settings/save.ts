import { defineOperation } from '#shared/http/operation.ts';
import { unknownSettingsFields } from '#shared/settings/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('saveSettings', async ({ userId, body, rawBody }, { settings }) => {
  await settings.save(userId, body);
  return { message: 'Settings stored', ignored_fields: unknownSettingsFields(rawBody) };
});
export const handler = awsHandler(operation);
