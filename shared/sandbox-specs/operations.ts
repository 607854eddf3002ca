import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageQuery, repeated } from '#shared/http/query.ts';
import { sandboxSpecInfoSchema, sandboxSpecPageSchema } from '#shared/sandbox-specs/model.ts';

/** The sandbox-spec routes. */
export const searchSandboxSpecs = defineOperation(
  'searchSandboxSpecs',
  () => ({ query: pageQuery, response: sandboxSpecPageSchema }),
  async ({ query }, { sandboxSpecs }) => sandboxSpecs.search(query.page_id, query.limit),
);

export const getSandboxSpecs = defineOperation(
  'getSandboxSpecs',
  () => ({ query: z.object({ id: repeated('id') }), response: z.array(z.nullable(sandboxSpecInfoSchema)) }),
  async ({ query }, { sandboxSpecs }) => sandboxSpecs.batchGet(query.id),
);
