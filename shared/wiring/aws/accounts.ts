import { DynamoAccountStore, DynamoAuditReader, DynamoAuditStore } from '#shared/accounts/dynamo-account-store.ts';
import { oidcVerifier } from '#shared/auth/oidc.ts';
import { DynamoRateLimiter } from '#shared/auth/rate-limit.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** People, organizations, invitations; the audit log (append to write, read to list). */
export const accountStore: Builder<'accountStore'> = () => new DynamoAccountStore();
export const auditStore: Builder<'auditStore'> = () => new DynamoAuditStore();
export const auditReader: Builder<'auditReader'> = () => new DynamoAuditReader();
/** The OpenID verifier of OIDC_ISSUER / OIDC_AUDIENCE, or null (keys only). */
export const oidc: Builder<'oidc'> = () => oidcVerifier();
/** Sign-in attempt counters in the keys table. */
export const signInLimiter: Builder<'signInLimiter'> = () => new DynamoRateLimiter();
