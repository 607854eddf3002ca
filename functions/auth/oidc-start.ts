import { oidcStart } from '#shared/auth/oidc-operations.ts';
import { oidcSignIn } from '#shared/services/oidc-sign-in.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { oidc } from '#shared/wiring/aws/accounts.ts';

export const handler = awsRoute(oidcStart, { oidc }, { oidcSignIn });
