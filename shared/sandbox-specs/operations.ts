import { defineOperation } from '#shared/http/operation.ts';

/** The sandbox-spec routes. */
export const searchSandboxSpecs = defineOperation('searchSandboxSpecs', async ({ query }, { sandboxSpecs }) =>
  sandboxSpecs.search(query.page_id, query.limit),
);

export const getSandboxSpecs = defineOperation('getSandboxSpecs', async ({ query }, { sandboxSpecs }) => sandboxSpecs.batchGet(query.id));
