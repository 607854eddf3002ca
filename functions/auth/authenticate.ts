import { authenticate } from '#shared/auth/operations.ts';
import { sessions } from '#shared/services/sessions.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(authenticate, { sessions });
