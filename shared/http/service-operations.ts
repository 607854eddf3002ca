import { defineOperation, Reply } from '#shared/http/operation.ts';
import { docsPage, openApiDocument } from '#shared/http/openapi.ts';

/** The service's own routes: liveness and the API documentation. */
export const health = defineOperation('health', async () => ({ status: 'ok' }));

let doc: ReturnType<typeof openApiDocument> | undefined;
export const openapi = defineOperation('openapi', async () => (doc ??= openApiDocument()));

export const docs = defineOperation('docs', async () => new Reply(200, docsPage(), { 'content-type': 'text/html; charset=utf-8' }));
