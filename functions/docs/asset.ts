import { docsAsset } from '#shared/http/docs-assets.ts';
import { notFound } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('docsAsset', async ({ params }) => {
  const asset = docsAsset(params.file);
  if (!asset) throw notFound();
  return new Reply(200, asset.body, { 'content-type': asset.contentType, 'cache-control': 'public, max-age=86400' });
});
export const handler = awsHandler(operation);
