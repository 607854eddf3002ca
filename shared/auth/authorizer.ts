import { keyFromHeaders, type ApiKeys } from '#shared/auth/api-keys.ts';
import type { Principal } from '#shared/auth/model.ts';

/**
 * The authorizer's decision for a request's headers: the principal, or null (the caller answers
 * 401). The Lambda authorizer and the local gateway both call this, so they cannot disagree.
 */
export async function authorizeHeaders(
  headers: Record<string, string | undefined>,
  apiKeys: ApiKeys,
): Promise<Principal | null> {
  return apiKeys.authenticate(keyFromHeaders(headers));
}
