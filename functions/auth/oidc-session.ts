import { oidcSession } from '#shared/auth/oidc-operations.ts';
import { accounts } from '#shared/services/accounts.ts';
import { audit } from '#shared/services/audit.ts';
import { oidcSignIn } from '#shared/services/oidc-sign-in.ts';
import { sessions } from '#shared/services/sessions.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore, oidc, signInLimiter } from '#shared/wiring/aws/accounts.ts';
import { keyStore, sessionStore } from '#shared/wiring/aws/keys.ts';

export const handler = awsRoute(
  oidcSession,
  { oidc, signInLimiter, accountStore, auditStore, sessionStore, keyStore },
  { oidcSignIn, accounts, audit, sessions },
);
