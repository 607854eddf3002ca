import * as z from '#shared/zod.ts';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { ApiError, invalidField } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { conversationIdSchema, sandboxIdSchema, workspaceReplySchema } from '#shared/protocol.ts';
import { successSchema } from '#shared/sandboxes/model.ts';
import type { WorkspaceResult } from '#shared/sandboxes/workspace-reads.ts';

/*
 * Reads of a conversation's workspace (shared/sandboxes/workspace-reads.ts): Agent Canvas's cloud
 * routes under /api/v1/app-conversations/{id}/, the agent server's git routes on the conversation
 * host (the late-2025 web UI), and the bridge route the program replies on.
 */

// Schemas as functions: a function builds only its own route's, on its first request.
const conversationParams = () => z.object({ conversation_id: conversationIdSchema });
/** A directory: `/workspace/project/...` or relative to it; absent, the workspace root. */
const dirQuery = () =>
  z.object({
    path: z._default(
      z
        .string()
        .check(z.meta({ description: '/workspace/project/... or relative to it (default: the workspace root)' })),
      '',
    ),
  });
const errors = [400, 404, 409, 413, 502, 504] as const;
const changesSchema = () =>
  z.array(z.object({ status: z.enum(['ADDED', 'DELETED', 'UPDATED', 'MOVED']), path: z.string() }));
const diffSchema = () => z.object({ original: z.nullable(z.string()), modified: z.nullable(z.string()) });

/** The result as the op it answers (the service checked it already; this keeps the types honest). */
function only<K extends WorkspaceResult['op']>(result: WorkspaceResult, op: K): Extract<WorkspaceResult, { op: K }> {
  if (result.op !== op) throw new ApiError(502, { detail: 'The sandbox answered another kind of read' });
  return result as Extract<WorkspaceResult, { op: K }>;
}

/**
 * A file's bytes as Agent Canvas reads them (`responseType: text`): text as `text/plain`, anything
 * with a NUL in its first 8000 bytes (Canvas's own test) or that is not UTF-8 as
 * `application/octet-stream` (Canvas then shows it as binary).
 */
function fileReply(contentBase64: string): Reply {
  const bytes = Buffer.from(contentBase64, 'base64');
  const binary = bytes.subarray(0, 8000).includes(0) || !isUtf8(bytes);
  return binary
    ? new Reply(200, bytes, { 'content-type': 'application/octet-stream' })
    : new Reply(200, bytes.toString('utf8'), { 'content-type': 'text/plain; charset=utf-8' });
}

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

export const workspaceFiles = defineOperation(
  'workspaceFiles',
  () => ({
    params: conversationParams(),
    query: dirQuery(),
    response: z.array(z.string()),
    errors,
  }),
  async ({ userId, params, query }, { workspaceReads }) =>
    only(await workspaceReads.read(userId, params.conversation_id, 'list', query.path, ['query', 'path']), 'list')
      .files,
);

export const workspaceFile = defineOperation(
  'workspaceFile',
  () => ({
    params: conversationParams(),
    query: z.object({
      file_path: z.string().check(z.minLength(1), z.meta({ description: '/workspace/project/... or relative to it' })),
    }),
    response: z.string(),
    errors,
  }),
  async ({ userId, params, query }, { workspaceReads }) =>
    fileReply(
      only(
        await workspaceReads.read(userId, params.conversation_id, 'file', query.file_path, ['query', 'file_path']),
        'file',
      ).content_base64,
    ),
);

export const workspaceGitChanges = defineOperation(
  'workspaceGitChanges',
  () => ({
    params: conversationParams(),
    query: dirQuery(),
    response: changesSchema(),
    errors,
  }),
  async ({ userId, params, query }, { workspaceReads }) =>
    only(
      await workspaceReads.read(userId, params.conversation_id, 'git_changes', query.path, ['query', 'path']),
      'git_changes',
    ).changes,
);

export const workspaceGitDiff = defineOperation(
  'workspaceGitDiff',
  () => ({
    params: conversationParams(),
    query: z.object({ path: z.string().check(z.minLength(1), z.meta({ description: 'The changed file' })) }),
    response: diffSchema(),
    errors,
  }),
  async ({ userId, params, query }, { workspaceReads }) => {
    const { original, modified } = only(
      await workspaceReads.read(userId, params.conversation_id, 'git_diff', query.path, ['query', 'path']),
      'git_diff',
    );
    return { original, modified };
  },
);

// --- the agent server's git routes on the conversation host (the late-2025 web UI) ----------------

const agentPathParams = () => z.object({ path: z.string().check(z.minLength(1)) });
const agentQuery = () =>
  z.object({
    // Which conversation, for user credentials (the conversation's own key names it).
    conversation_id: z.optional(conversationIdSchema),
  });

/** The conversation a `conversationKey: 'key'` route reads: the key's own, or the query's for user credentials. */
function conversationOf(auth: AuthorizerContext, query: { conversation_id?: string }): string {
  const id = auth.via === 'conversation' ? auth.conversationId : query.conversation_id;
  if (!id)
    throw invalidField(
      ['query', 'conversation_id'],
      "Field required: name the conversation, or call with the conversation's own session_api_key",
    );
  return id;
}

export const agentGitChanges = defineOperation(
  'agentGitChanges',
  () => ({ params: agentPathParams(), query: agentQuery(), response: changesSchema(), errors }),
  async ({ userId, auth, params, query }, { workspaceReads }) =>
    only(
      await workspaceReads.read(userId, conversationOf(auth, query), 'git_changes', params.path, ['path', 'path']),
      'git_changes',
    ).changes,
);

export const agentGitDiff = defineOperation(
  'agentGitDiff',
  () => ({ params: agentPathParams(), query: agentQuery(), response: diffSchema(), errors }),
  async ({ userId, auth, params, query }, { workspaceReads }) => {
    const { original, modified } = only(
      await workspaceReads.read(userId, conversationOf(auth, query), 'git_diff', params.path, ['path', 'path']),
      'git_diff',
    );
    return { original, modified };
  },
);

// --- the bridge: the program's reply ------------------------------------------------------------

export const sandboxCommandReply = defineOperation(
  'sandboxCommandReply',
  () => ({
    params: z.object({
      sandbox_id: sandboxIdSchema,
      seq: z.coerce.number().check(z.int(), z.gte(1), z.lte(Number.MAX_SAFE_INTEGER)),
    }),
    body: workspaceReplySchema,
    response: successSchema,
    errors: [404, 409],
  }),
  ({ params, body, sandbox }, { workspaceReads }) => workspaceReads.acceptReply(sandbox, params.seq, body),
);
