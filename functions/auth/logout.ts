import { logout } from '#shared/auth/operations.ts';
import { sessions } from '#shared/services/sessions.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { keyStore, sessionStore } from '#shared/wiring/aws/keys.ts';
import { origins } from '#shared/wiring/aws/origins.ts';

export const handler = awsRoute(logout, { keyStore, sessionStore, origins }, { sessions });
