import { canvasConversationSettingsSchema } from '#shared/settings/canvas-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasConversationSettingsSchema);
