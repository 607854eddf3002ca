import * as z from '#shared/zod.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { pageQuery, repeated } from '#shared/http/query.ts';
import { tenantOf } from '#shared/plans/limits.ts';
import { sandboxIdSchema, sandboxParams } from '#shared/protocol.ts';
import { PAUSED_HEADER, sandboxInfoSchema, sandboxPageSchema, successSchema } from '#shared/sandboxes/model.ts';

/** The user's sandbox routes (the sandbox program's own are in bridge-operations.ts). */
export const searchSandboxes = defineOperation(
  'searchSandboxes',
  () => ({ query: pageQuery, response: sandboxPageSchema }),
  ({ userId, query }, { sandboxes }) => sandboxes.search(userId, query.page_id, query.limit),
);

export const getSandboxes = defineOperation(
  'getSandboxes',
  () => ({
    query: z.object({ id: repeated('id', sandboxIdSchema) }),
    response: z.array(z.nullable(sandboxInfoSchema)),
  }),
  ({ userId, query }, { sandboxes }) => sandboxes.batchGet(userId, query.id),
);

export const startSandbox = defineOperation(
  'startSandbox',
  () => ({
    query: z.object({ sandbox_spec_id: z.optional(z.string().check(z.minLength(1), z.maxLength(255))) }),
    response: sandboxInfoSchema,
    errors: [402],
  }),
  async ({ userId, auth, query, headers }, { sandboxes }) => {
    const { sandbox, paused } = await sandboxes.start(
      userId,
      query.sandbox_spec_id,
      headers.host,
      tenantOf(userId, auth),
    );
    return new Reply(200, sandbox, paused.length ? { [PAUSED_HEADER]: paused.join(',') } : {});
  },
);

export const pauseSandbox = defineOperation(
  'pauseSandbox',
  () => ({ params: sandboxParams, response: successSchema, errors: [409] }),
  async ({ userId, params }, { sandboxes }) => {
    await sandboxes.pause(userId, params.sandbox_id);
    return { success: true };
  },
);

export const resumeSandbox = defineOperation(
  'resumeSandbox',
  () => ({ params: sandboxParams, response: successSchema, errors: [402, 409] }),
  async ({ userId, auth, params, headers }, { sandboxes }) => {
    const { paused } = await sandboxes.resume(userId, params.sandbox_id, headers.host, tenantOf(userId, auth));
    return new Reply(200, { success: true }, paused.length ? { [PAUSED_HEADER]: paused.join(',') } : {});
  },
);

export const deleteSandbox = defineOperation(
  'deleteSandbox',
  () => ({ params: sandboxParams, response: successSchema, errors: [409] }),
  async ({ userId, params }, { sandboxes }) => {
    await sandboxes.delete(userId, params.sandbox_id);
    return { success: true };
  },
);
