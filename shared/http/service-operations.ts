import * as z from 'zod';
import { docsAsset as findDocsAsset, docsPage } from '#shared/http/docs-assets.ts';
import { notFound } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';

/** The service's own routes: liveness and the API documentation (the OpenAPI document's is in openapi-operation.ts). */
export const health = defineOperation('health', () => ({ response: z.object({ status: z.literal('ok') }) }), async () => ({ status: 'ok' }));

export const docs = defineOperation(
  'docs',
  () => ({}),
  async () => new Reply(200, docsPage('Agent Conversation Service API'), { 'content-type': 'text/html; charset=utf-8' }),
);

export const docsAsset = defineOperation('docsAsset', () => ({ params: z.object({ file: z.string().max(64) }) }), async ({ params }) => {
  const asset = findDocsAsset(params.file);
  if (!asset) throw notFound();
  return new Reply(200, asset.body, { 'content-type': asset.contentType, 'cache-control': 'public, max-age=86400' });
});
