import { defineOperation } from '#shared/http/operation.ts';
import { openApiDocument } from '#shared/http/openapi.ts';
import { operations } from '#shared/operations.ts';

/**
 * The OpenAPI document, generated once per container from the route table and every operation's
 * schemas; its `servers` is the URL the caller reached (on AWS `PUBLIC_BASE_URL`, the stack's PublicUrl).
 */
let doc: ReturnType<typeof openApiDocument> | undefined;
export const openapi = defineOperation(
  'openapi',
  () => ({}),
  async ({ baseUrl }) => {
    doc ??= openApiDocument(operations);
    return { ...doc, servers: [{ url: baseUrl, description: 'This API' }] };
  },
);
