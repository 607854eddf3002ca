import { legacyCreateConversation } from '#shared/conversations/legacy-operations.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(legacyCreateConversation, { legacyConversations, idempotency, poolClaims });
