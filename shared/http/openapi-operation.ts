import { defineOperation } from '#shared/http/operation.ts';
import { openApiDocument } from '#shared/http/openapi.ts';
import { operations } from '#shared/operations.ts';

/** The OpenAPI document, generated once per container from the route table and every operation's schemas. */
let doc: ReturnType<typeof openApiDocument> | undefined;
export const openapi = defineOperation(
  'openapi',
  () => ({}),
  async () => (doc ??= openApiDocument(operations)),
);
