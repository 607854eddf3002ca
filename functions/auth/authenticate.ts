import { sessionCookie } from '#shared/auth/sessions.ts';
import { forbidden } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

/** Exchanges the API key the request carries for a session cookie (browser sign-in). */
export const operation = defineOperation('authenticate', async ({ userId, auth, baseUrl }, { sessions }) => {
  if (auth.via !== 'key' || !auth.keyId) throw forbidden('Sign in with an API key (X-Session-API-Key or Authorization: Bearer)');
  const session = await sessions.create(userId, auth.keyId);
  return new Reply(200, { success: true, user_id: userId, expires_at: session.expiresAt }, {
    'set-cookie': sessionCookie(session.token, session.maxAgeSeconds, baseUrl.startsWith('https:')),
    'cache-control': 'no-store',
  });
});
export const handler = awsHandler(operation);
