import type { StartTaskStore } from '#shared/conversations/conversation-store.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import { logger } from '#shared/logging.ts';
import { startTaskStatuses } from '#shared/protocol.ts';

/** Every step of a start but its two ends. */
const UNFINISHED = startTaskStatuses.filter((s) => s !== 'READY' && s !== 'ERROR');

/** Longer than any start request runs (API Gateway's 30 s). */
export const START_WRITE_SECONDS = 60;

/** Conversations' housekeeping (the scheduled sweeper is its audience): start tasks that cannot finish. */
export class ConversationHousekeeping {
  constructor(
    private readonly tasks: StartTaskStore,
    private readonly sandboxes: Pick<SandboxQueue, 'statuses'>,
  ) {}

  /**
   * Fails start tasks that cannot finish: their sandbox failed (at once, with the sandbox's reason), or
   * they stopped moving for longer than `timeoutSeconds` (each step a sandbox reports resets the clock).
   * Idempotent: a task already finished is left alone by the conditional transition.
   */
  async sweepStartTasks(now: Date, timeoutSeconds: number): Promise<number> {
    const { tasks, sandboxes } = this;
    const pending = await tasks.stalled(now.toISOString(), 100);
    const boxes = await sandboxes.statuses(pending.flatMap((t) => (t.sandbox_id ? [t.sandbox_id] : [])));
    let failed = 0;
    for (const task of pending) {
      const sandbox = task.sandbox_id ? boxes.get(task.sandbox_id) : undefined;
      const idleSeconds = (now.getTime() - Date.parse(task.updatedAt)) / 1000;
      let detail: string | undefined;
      // A start names its sandbox before writing the sandbox's record: no record is a failure only once
      // the start's request is surely over (deleted since, or never written).
      const absent = !sandbox && idleSeconds > START_WRITE_SECONDS;
      if (task.sandbox_id && (absent || sandbox?.status === 'ERROR' || sandbox?.status === 'MISSING')) {
        detail = `The sandbox ${task.sandbox_id} failed${sandbox?.detail ? `: ${sandbox.detail}` : ` (${sandbox?.status ?? 'MISSING'})`}`;
      } else if (idleSeconds > timeoutSeconds) {
        detail = `The start stopped moving at ${task.status} for more than ${timeoutSeconds} s${sandbox?.status === 'PAUSED' ? ' (its sandbox was paused)' : ''}; start the conversation again`;
      }
      if (detail && (await tasks.transition(task.id, UNFINISHED, 'ERROR', { detail }))) {
        failed++;
        logger.warn('conversation.failed', { startTaskId: task.id, conversationId: task.app_conversation_id, detail });
      }
    }
    return failed;
  }
}

/** `START_TASK_TIMEOUT_SECONDS` (a start step that reports nothing for this long fails), or the deployment's default. */
export function startTaskTimeoutSeconds(env: NodeJS.ProcessEnv, fallback: number): number {
  const raw = env.START_TASK_TIMEOUT_SECONDS;
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10 || n > 86_400)
    throw new Error(
      `Configuration error: START_TASK_TIMEOUT_SECONDS must be an integer from 10 to 86400, not "${raw}"`,
    );
  return n;
}
