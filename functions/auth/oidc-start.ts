import { oidcStart } from '#shared/auth/oidc-operations.ts';
import { oidcSignIn } from '#shared/services/oidc-sign-in.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(oidcStart, { oidcSignIn });
