import { oidcSession } from '#shared/auth/oidc-operations.ts';
import { accounts } from '#shared/services/accounts.ts';
import { audit } from '#shared/services/audit.ts';
import { oidcSignIn } from '#shared/services/oidc-sign-in.ts';
import { sessions } from '#shared/services/sessions.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(oidcSession, { oidcSignIn, accounts, audit, sessions });
