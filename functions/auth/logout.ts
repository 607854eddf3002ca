import { sessionCookie, sessionToken } from '#shared/auth/sessions.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

/** Ends the session server-side and removes the cookie; answers the same whether one existed or not. */
export const operation = defineOperation('logout', async ({ headers, baseUrl }, { sessions }) => {
  await sessions.end(sessionToken(headers));
  return new Reply(200, { success: true }, { 'set-cookie': sessionCookie(null, 0, baseUrl.startsWith('https:')), 'cache-control': 'no-store' });
});
export const handler = awsHandler(operation);
