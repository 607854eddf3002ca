import { DynamoAccountStore, DynamoAuditReader, DynamoAuditStore } from '#shared/accounts/dynamo-account-store.ts';
import { oidcVerifier } from '#shared/auth/oidc.ts';
import { DynamoRateLimiter } from '#shared/auth/rate-limit.ts';
import { ApiGatewayStreamEviction } from '#shared/stream/api-gateway-eviction.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';

/** People, organizations, invitations; the audit log (append to write, read to list). */
export const accountStore: Builder<'accountStore'> = () => new DynamoAccountStore();
export const auditStore: Builder<'auditStore'> = () => new DynamoAuditStore();
export const auditReader: Builder<'auditReader'> = () => new DynamoAuditReader();
/** The OpenID verifier of OIDC_ISSUER / OIDC_AUDIENCE, or null (keys only). */
export const oidc: Builder<'oidc'> = () => oidcVerifier();
/** DeleteConnection on the stream API's stage for a person's connections (byUser). */
export const streamEviction: Builder<'streamEviction'> = () =>
  new ApiGatewayStreamEviction(requireEnv('STREAM_CALLBACK_URL', "the stream API stage's @connections endpoint"));
/** Sign-in attempt counters in the keys table. */
export const signInLimiter: Builder<'signInLimiter'> = () => new DynamoRateLimiter();
