import { docsAsset as findDocsAsset, docsPage } from '#shared/http/docs-assets.ts';
import { notFound } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { openApiDocument } from '#shared/http/openapi.ts';

/** The service's own routes: liveness and the API documentation. */
export const health = defineOperation('health', async () => ({ status: 'ok' }));

let doc: ReturnType<typeof openApiDocument> | undefined;
export const openapi = defineOperation('openapi', async () => (doc ??= openApiDocument()));

export const docs = defineOperation(
  'docs',
  async () => new Reply(200, docsPage('Agent Conversation Service API'), { 'content-type': 'text/html; charset=utf-8' }),
);

export const docsAsset = defineOperation('docsAsset', async ({ params }) => {
  const asset = findDocsAsset(params.file);
  if (!asset) throw notFound();
  return new Reply(200, asset.body, { 'content-type': asset.contentType, 'cache-control': 'public, max-age=86400' });
});
