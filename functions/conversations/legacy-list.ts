import { legacyListConversations } from '#shared/conversations/legacy-operations.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(legacyListConversations, { legacyConversations });
