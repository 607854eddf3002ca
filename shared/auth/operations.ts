import * as z from '#shared/zod.ts';
import { apiKeyView } from '#shared/auth/model.ts';
import { portOf, sessionCookie, sessionToken } from '#shared/auth/sessions.ts';
import { CROSS_SITE_REFUSAL } from '#shared/auth/authorizer.ts';
import { KEY_CACHE_SECONDS } from '#shared/auth/key-cache.ts';
import { forbidden, invalidField, notFound } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { successSchema } from '#shared/sandboxes/model.ts';

/** Browser sign-in: exchanges the API key the request carries for a session cookie. */
export const authenticate = defineOperation(
  'authenticate',
  () => ({ response: z.object({ success: z.literal(true), user_id: z.string(), expires_at: z.string() }) }),
  async ({ userId, auth, baseUrl }, { sessions }) => {
    if (auth.via !== 'key' || !auth.keyId)
      throw forbidden('Sign in with an API key (X-Session-API-Key or Authorization: Bearer)');
    const session = await sessions.create(userId, auth.keyId);
    return new Reply(
      200,
      { success: true, user_id: userId, expires_at: session.expiresAt },
      {
        'set-cookie': sessionCookie(
          session.token,
          session.maxAgeSeconds,
          baseUrl.startsWith('https:'),
          portOf(baseUrl),
        ),
        'cache-control': 'no-store',
      },
    );
  },
);

/**
 * Ends the session server-side and removes the cookie; answers the same whether one existed or not.
 * A cookie write like any other: with a session cookie, only from an allowed Origin (a page on
 * another site, or on another port of a local host, cannot sign the user out). Over plain http it
 * also asks the browser to clear this host's cookies (`Clear-Site-Data`), which removes a session
 * cookie another port planted under some other path, which no Set-Cookie of ours could name.
 */
export const logout = defineOperation(
  'logout',
  () => ({ response: z.object({ success: z.literal(true) }) }),
  async ({ headers, baseUrl }, { sessions }) => {
    const secure = baseUrl.startsWith('https:');
    if (!sessions.mayWriteCookie(headers)) throw forbidden(CROSS_SITE_REFUSAL);
    await sessions.end(sessionToken(headers));
    return new Reply(
      200,
      { success: true },
      {
        'set-cookie': sessionCookie(null, 0, secure, portOf(baseUrl)),
        'cache-control': 'no-store',
        ...(secure ? {} : { 'clear-site-data': '"cookies"' }),
      },
    );
  },
);

// The caller's own API keys: never the keys themselves, except a new one in its creation's response.
export const listKeys = defineOperation(
  'listKeys',
  () => ({ response: z.array(apiKeyView) }),
  ({ userId }, { apiKeys }) => apiKeys.listActive(userId),
);

export const createKey = defineOperation(
  'createKey',
  () => ({
    body: z.strictObject({
      name: z.string().check(z.trim(), z.minLength(1, 'name must not be empty'), z.maxLength(64)),
      // An ISO 8601 time with its zone, in the future, at most a year ahead.
      expires_at: z.optional(
        z
          .string()
          .check(
            z.regex(
              /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/,
              'expires_at must be an ISO 8601 time with a zone',
            ),
          ),
      ),
    }),
    response: z.extend(z.unlazy(apiKeyView), { key: z.string() }),
    errors: [409],
    example: { name: 'ci' },
  }),
  async ({ userId, auth, body }, { apiKeys, audit }) => {
    let expiresAt: string | undefined;
    if (body.expires_at !== undefined) {
      const at = Date.parse(body.expires_at);
      if (!Number.isFinite(at) || at <= Date.now() || at > Date.now() + 366 * 86_400_000)
        throw invalidField(
          ['body', 'expires_at'],
          'expires_at must be in the future and at most a year ahead',
          body.expires_at,
        );
      expiresAt = new Date(at).toISOString();
    }
    const created = await apiKeys.createOwn(userId, body.name, expiresAt);
    if (auth.orgId)
      await audit.record(auth.orgId, userId, 'key_created', {
        target: created.id,
        detail: expiresAt ? `expires ${expiresAt}` : undefined,
      });
    return created;
  },
);

export const deleteKey = defineOperation(
  'deleteKey',
  () => ({
    params: z.object({ key_id: z.string().check(z.regex(/^[0-9a-f]{16}$/, 'must be a key id (16 hex characters)')) }),
    response: z.extend(z.unlazy(successSchema), {
      effective_within_seconds: z.number().check(z.int()),
      detail: z.string(),
    }),
  }),
  async ({ userId, auth, params }, { apiKeys, audit }) => {
    if (!(await apiKeys.revokeOwn(userId, params.key_id))) throw notFound('Key not found');
    if (auth.orgId) await audit.record(auth.orgId, userId, 'key_revoked', { target: params.key_id });
    // Authorizers hold key records they read for KEY_CACHE_SECONDS: say when the refusal is certain.
    return {
      success: true,
      effective_within_seconds: KEY_CACHE_SECONDS,
      detail: `Revoked: requests with this key are refused within ${KEY_CACHE_SECONDS} seconds`,
    };
  },
);

/**
 * `GET /api/keys/current` (Agent Canvas's health check in cloud mode): the key the request came with.
 * With the session cookie there is no key: `{"id": null, "name": "session", "auth_type": "session"}`.
 * `org_id` is the caller's organization (`GET /api/organizations`).
 */
export const currentKey = defineOperation(
  'currentKey',
  () => ({
    response: z.object({
      id: z.nullable(z.string()),
      name: z.string(),
      org_id: z.string(),
      user_id: z.string(),
      auth_type: z.enum(['api_key', 'session']),
    }),
  }),
  async ({ userId, auth }, { apiKeys }) => {
    if (auth?.via !== 'key')
      return {
        id: null,
        name: 'session',
        org_id: auth.orgId ?? userId,
        user_id: userId,
        auth_type: 'session' as const,
      };
    const key = (await apiKeys.listActive(userId)).find((k) => k.id === auth.keyId);
    return {
      id: auth.keyId ?? null,
      name: key?.name ?? '',
      org_id: auth.orgId ?? userId,
      user_id: userId,
      auth_type: 'api_key' as const,
    };
  },
);
