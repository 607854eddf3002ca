import { randomUUID } from 'node:crypto';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import { ApiError, badRequest, conflict, invalidField, notFound, unauthorized } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import {
  WORKSPACE_DIFF_MAX_BYTES,
  WORKSPACE_FILE_MAX_BYTES,
  WORKSPACE_PATH_MAX_BYTES,
  WORKSPACE_READ_COMMAND,
  WORKSPACE_READ_WAIT_MS,
  type WorkspaceReadOp,
  type WorkspaceReadPayload,
  type WorkspaceReply,
  workspaceReplySchema,
} from '#shared/protocol.ts';
import { commandQueued, commandQueuedOrTimeout } from '#shared/sandboxes/command-signal.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import type { SandboxStore } from '#shared/sandboxes/sandbox-store.ts';
import { readArchive, type WorkspaceArchives } from '#shared/sandboxes/snapshots/workspace-archive.ts';
import * as z from '#shared/zod.ts';

/** Where clients see the workspace (the agent server's `working_dir`): `/workspace/project/...` maps to its root. */
export const WORKSPACE_ROOT = '/workspace/project';
/** The program's own state (conversations' agent state): never served. */
export const HIDDEN_DIR = '.sandbox-state';

/**
 * A client's path as one relative to the workspace root: `/workspace/project/src/a.ts` and
 * `src/a.ts` are the same file. Refused (422 naming `loc`): NUL bytes, more than PATH_MAX bytes,
 * an absolute path outside the workspace, a `..` segment. Symlinks are the program's to refuse
 * (it alone sees the files): it never follows one out of the workspace.
 */
export function toWorkspacePath(input: string, loc: (string | number)[]): string {
  if (input.includes('\0')) throw invalidField(loc, 'must not contain NUL bytes');
  if (Buffer.byteLength(input) > WORKSPACE_PATH_MAX_BYTES)
    throw invalidField(loc, `must be at most ${WORKSPACE_PATH_MAX_BYTES} bytes`);
  let rest = input;
  if (input.startsWith('/')) {
    if (input !== WORKSPACE_ROOT && !input.startsWith(`${WORKSPACE_ROOT}/`))
      throw invalidField(loc, `must be inside ${WORKSPACE_ROOT} (or relative to it)`, input.slice(0, 200));
    rest = input.slice(WORKSPACE_ROOT.length);
  }
  const parts: string[] = [];
  for (const segment of rest.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') throw invalidField(loc, 'must not contain ".." segments', input.slice(0, 200));
    parts.push(segment);
  }
  return parts.join('/');
}

export const isHidden = (path: string) => path === HIDDEN_DIR || path.startsWith(`${HIDDEN_DIR}/`);

/** The result of a read that succeeded (an error reply becomes an ApiError). */
export type WorkspaceResult = Exclude<WorkspaceReply['result'], { error: string }>;

/** Where the waiting route is woken locally when the reply to `seq` arrives (command-signal.ts). */
const replySignal = (sandboxId: string, seq: number) => `reply:${sandboxId}:${seq}`;

/**
 * Workspace reads for the user's routes (`/files`, `/file`, git changes and diffs). A RUNNING
 * sandbox answers over the bridge: the read is a command queued (and pushed on AWS) like any other,
 * the program posts its reply to `.../bridge/commands/{seq}/reply`, and this waits at most
 * WORKSPACE_READ_WAIT_MS for it (then 504, and the command leaves the queue). A paused or stopped
 * sandbox is read from its workspace archive (the latest snapshot on AWS) instead.
 */
export class WorkspaceReads {
  constructor(
    private readonly deps: { store: SandboxStore },
    private readonly conversations: ConversationStore,
    /** Queues the command (and pushes it where a socket is) exactly as every other command is. */
    private readonly queue: Pick<SandboxQueue, 'enqueueCommand'>,
    private readonly archives: WorkspaceArchives,
  ) {}

  /** One read of the caller's conversation's workspace; 404 for a conversation or path that is not theirs or not there. */
  async read(
    userId: string,
    conversationId: string,
    op: WorkspaceReadOp,
    rawPath: string,
    loc: (string | number)[],
  ): Promise<WorkspaceResult> {
    const path = toWorkspacePath(rawPath, loc);
    const conversation = await this.conversations.get(userId, conversationId);
    if (!conversation) throw notFound('Conversation not found');
    if (!conversation.sandbox_id) throw conflict('The conversation has no sandbox yet; wait for its start task');
    const rec = await this.deps.store.get(conversation.sandbox_id);
    if (!rec || rec.deletedAt || rec.userId !== userId) throw notFound('Conversation not found');
    if (isHidden(path)) throw notFound(`No such file or directory in the workspace: ${rawPath.slice(0, 200)}`);
    if (rec.status === 'STARTING') throw conflict('The sandbox is starting: try again once it is RUNNING');
    const reply =
      rec.status === 'RUNNING'
        ? await this.overBridge(userId, rec, conversation.id, op, path)
        : await this.fromArchive(rec, op, path);
    return resultOf(reply, op, rawPath);
  }

  private async overBridge(
    userId: string,
    rec: SandboxRecord,
    conversationId: string,
    op: WorkspaceReadOp,
    path: string,
  ): Promise<WorkspaceReply['result']> {
    const requestId = randomUUID().replaceAll('-', '');
    const deadline = Date.now() + WORKSPACE_READ_WAIT_MS;
    const payload: WorkspaceReadPayload = {
      request_id: requestId,
      conversation_id: conversationId,
      op,
      path,
      expires_at: new Date(deadline).toISOString(),
    };
    const seq = await this.queue.enqueueCommand(userId, rec.id, { type: WORKSPACE_READ_COMMAND, payload });
    const store = this.deps.store;
    // Locally the reply wakes this at once; on Lambda (another container posts it) the item is read
    // again after a short pause that doubles up to 400 ms.
    for (let pause = 50; ; pause = Math.min(pause * 2, 400)) {
      const body = await store.getReply(rec.id, seq);
      if (body !== undefined) {
        // Answered: out of the queue too (the program acknowledges it as well; both are idempotent).
        await Promise.all([store.deleteReply(rec.id, seq), store.deleteCommand(rec.id, seq)]);
        return checkedReply(body, requestId, conversationId, op);
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      await commandQueuedOrTimeout(replySignal(rec.id, seq), Math.min(pause, left));
    }
    // Out of the queue, so a program that comes back later does not read for nobody.
    await store.deleteCommand(rec.id, seq);
    await store.deleteReply(rec.id, seq);
    logger.warn('workspace.read.timeout', { sandboxId: rec.id, seq, op });
    throw new ApiError(504, {
      detail: `The sandbox did not answer the workspace read within ${WORKSPACE_READ_WAIT_MS / 1000} s: try again`,
    });
  }

  private async fromArchive(rec: SandboxRecord, op: WorkspaceReadOp, path: string): Promise<WorkspaceReply['result']> {
    if (op === 'git_changes' || op === 'git_diff')
      throw conflict(
        `The sandbox is ${rec.status}: resume it to read git changes (its snapshot is read for files only)`,
      );
    const archive = await this.archives.open(rec);
    if (!archive) throw conflict(`The sandbox is ${rec.status} and has no saved workspace yet`);
    return readArchive(archive, op, path);
  }

  /**
   * The program's reply to command `seq` (its own queue: the wrapper checked the key is this
   * sandbox's). Refused: no such workspace read (acknowledged, timed out, another command), another
   * request's id or conversation (409), a second reply (409).
   */
  async acceptReply(rec: SandboxRecord | undefined, seq: number, reply: WorkspaceReply): Promise<{ success: true }> {
    if (!rec) throw unauthorized();
    const command = await this.deps.store.getCommand(rec.id, seq);
    if (!command || command.type !== WORKSPACE_READ_COMMAND || command.payload === undefined)
      throw notFound('No workspace read is waiting for a reply under this seq');
    const asked = JSON.parse(command.payload) as WorkspaceReadPayload;
    if (asked.request_id !== reply.request_id || asked.conversation_id !== reply.conversation_id)
      throw conflict('The reply names another request or conversation than the command it answers');
    if (!(await this.deps.store.putReply(rec.id, seq, JSON.stringify(reply), new Date().toISOString())))
      throw conflict('This workspace read was answered already');
    commandQueued(replySignal(rec.id, seq));
    return { success: true };
  }
}

/** The stored reply, checked again (another function wrote it): a reply that is not one is a 502. */
function checkedReply(
  body: string,
  requestId: string,
  conversationId: string,
  op: WorkspaceReadOp,
): WorkspaceReply['result'] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const out = z.safeParse(workspaceReplySchema, parsed);
  if (
    !out.success ||
    out.data.request_id !== requestId ||
    out.data.conversation_id !== conversationId ||
    ('op' in out.data.result && out.data.result.op !== op)
  )
    throw new ApiError(502, { detail: 'The sandbox answered the workspace read with an invalid reply' });
  return out.data.result;
}

/** A reply's result for the route, or the error it names. */
function resultOf(result: WorkspaceReply['result'], op: WorkspaceReadOp, rawPath: string): WorkspaceResult {
  if (!('error' in result)) {
    if (result.op !== op) throw new ApiError(502, { detail: 'The sandbox answered another kind of read' });
    return result;
  }
  const shown = rawPath.slice(0, 200);
  switch (result.error) {
    case 'not_found':
      throw notFound(`No such file or directory in the workspace: ${shown}`);
    case 'too_large': {
      const max = op === 'git_diff' ? WORKSPACE_DIFF_MAX_BYTES : WORKSPACE_FILE_MAX_BYTES;
      throw new ApiError(413, {
        detail: `${shown} is ${result.size !== undefined ? `${result.size} bytes` : 'too large'}: at most ${max} bytes are served`,
      });
    }
    case 'not_a_file':
      throw badRequest(op === 'list' ? `${shown} is not a directory` : `${shown} is not a regular file`);
    default:
      throw new ApiError(502, { detail: `The sandbox could not read ${shown}: ${result.message ?? 'failed'}` });
  }
}
