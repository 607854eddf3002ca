import * as z from '#shared/zod.ts';
import { docsAsset as findDocsAsset, docsPage } from '#shared/http/docs-assets.ts';
import {
  consoleAsset as findConsoleAsset,
  consoleHeaders,
  consoleManifest,
  consolePage as findConsolePage,
} from '#shared/http/console-assets.ts';
import { ApiError, notFound } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { sessionToken } from '#shared/auth/sessions.ts';

/** The service's own routes: liveness, the API documentation and the web console (the OpenAPI document's is in openapi-operation.ts). */
export const health = defineOperation(
  'health',
  () => ({ response: z.object({ status: z.literal('ok') }) }),
  async () => ({ status: 'ok' }),
);

export const docs = defineOperation(
  'docs',
  () => ({}),
  async () =>
    new Reply(200, docsPage('Agent Conversation Service API'), { 'content-type': 'text/html; charset=utf-8' }),
);

export const docsAsset = defineOperation(
  'docsAsset',
  () => ({ params: z.object({ file: z.string().check(z.maxLength(64)) }) }),
  async ({ params }) => {
    const asset = findDocsAsset(params.file);
    if (!asset) throw notFound();
    return new Reply(200, asset.body, { 'content-type': asset.contentType, 'cache-control': 'public, max-age=86400' });
  },
);

/** The console's page with its headers: `prefix` leads from the page's path back to the root (`../` from /auth/callback). */
function consoleReply(baseUrl: string, session: boolean, prefix = ''): Reply {
  const page = findConsolePage(session, prefix);
  if (!page)
    throw new ApiError(503, { detail: 'The console is not built: npm start builds it (infra/console-build.ts)' });
  return new Reply(200, page, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-cache',
    ...consoleHeaders(baseUrl),
  });
}

/** `/`: the web console's page (console/), with its Content-Security-Policy; 503 before it was built. */
export const consolePage = defineOperation(
  'console',
  () => ({}),
  async ({ baseUrl, headers }) => consoleReply(baseUrl, sessionToken(headers) !== undefined),
);

/** `/auth/callback`: the same page, where the issuer sends the person back (the page completes the sign-in). */
export const consoleCallback = defineOperation(
  'consoleCallback',
  () => ({
    // What an issuer sends back (RFC 6749 4.1.2); the page reads them, so they are bounded here.
    query: z.object({
      code: z.optional(z.string().check(z.maxLength(2048))),
      state: z.optional(z.string().check(z.maxLength(512))),
      iss: z.optional(z.string().check(z.maxLength(2048))),
      error: z.optional(z.string().check(z.maxLength(256))),
      error_description: z.optional(z.string().check(z.maxLength(2048))),
      session_state: z.optional(z.string().check(z.maxLength(512))),
    }),
  }),
  async ({ baseUrl }) => consoleReply(baseUrl, false, '../'),
);

export const consoleAsset = defineOperation(
  'consoleAsset',
  () => ({
    params: z.object({ file: z.string().check(z.maxLength(64)) }),
    query: z.object({ v: z.optional(z.string().check(z.maxLength(64))) }),
  }),
  async ({ params, query, baseUrl }) => {
    const asset = findConsoleAsset(params.file);
    if (!asset) throw notFound();
    // The page names the build's version in the URL: that URL's content never changes.
    const current = query.v !== undefined && query.v === consoleManifest()?.version;
    return new Reply(200, asset.body, {
      'content-type': asset.contentType,
      'cache-control': current ? 'public, max-age=31536000, immutable' : 'no-cache',
      ...consoleHeaders(baseUrl),
    });
  },
);
