import { notFound } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import type { CommandInput, SandboxCommand, SandboxStatus } from '#shared/protocol.ts';
import { pushMessage, type CommandPush } from '#shared/sandboxes/command-push.ts';
import { commandQueued } from '#shared/sandboxes/command-signal.ts';
import type { SandboxRecord, SandboxStore } from '#shared/sandboxes/sandbox-store.ts';

/** What the queue is built on: the sandboxes table, and the push to programs' sockets (AWS; null locally). */
export interface SandboxQueueDeps {
  store: SandboxStore;
  commandPush: CommandPush | null;
  now?: () => Date;
}

/**
 * What other services do to a user's sandbox without starting or stopping it: read its status, queue
 * a command for its program (and push it), note its agent's activity. The conversation services and the
 * workspace reads are built on this, not on the sandbox service, so their functions need neither the
 * sandbox runtime nor the user's settings.
 */
export class SandboxQueue {
  constructor(private readonly deps: SandboxQueueDeps) {}

  private iso(): string {
    return (this.deps.now ?? (() => new Date()))().toISOString();
  }

  /**
   * Queues a command for the user's sandbox (e.g. `start_conversation`, `send_message`), then pushes it
   * to the program's command socket if it has one (AWS); otherwise the program receives it through the
   * long-poll. The payload is stored as it is: no command carries a secret (the program fetches a
   * conversation's secrets with its start configuration), and a user message is stored as an event in
   * the clear anyway. 404 for an unknown or foreign sandbox. Returns the command's seq.
   */
  async enqueueCommand(userId: string, sandboxId: string, command: CommandInput): Promise<number> {
    const rec = await this.deps.store.get(sandboxId);
    if (!rec || rec.userId !== userId || rec.deletedAt) throw notFound('Sandbox not found');
    const payload = command.payload === undefined ? undefined : JSON.stringify(command.payload);
    const seq = await this.deps.store.nextCommandSeq(sandboxId);
    if (seq === undefined) throw notFound('Sandbox not found');
    const createdAt = this.iso();
    await this.deps.store.putCommand({ sandboxId, seq, type: command.type, payload, createdAt });
    await this.push(rec, { seq, type: command.type, payload: command.payload ?? null, created_at: createdAt });
    commandQueued(sandboxId);
    return seq;
  }

  /**
   * Best effort: the command is queued already, and a program that missed a push (socket gone, a
   * failed call) fetches it over HTTP when its next heartbeat shows a newer `command_seq`.
   */
  private async push(rec: SandboxRecord, command: SandboxCommand): Promise<void> {
    const push = this.deps.commandPush;
    const connection = rec.commandSocket;
    if (!push || !connection || rec.status !== 'RUNNING') return;
    try {
      if (!(await push.send(connection, pushMessage(command))))
        await this.deps.store.clearCommandSocket(rec.id, connection);
    } catch (err) {
      logger.warn('Pushing a command to its sandbox failed; the program fetches it after its next heartbeat', {
        sandboxId: rec.id,
        seq: command.seq,
        error: err as Error,
      });
    }
  }

  /**
   * Agent activity seen elsewhere (events posted through a bridge route): postpones the idle pause. False
   * when the sandbox is not RUNNING. Here, not on the bridge, so the conversation functions that call
   * it do not carry the bridge's code (check-in, metering).
   */
  recordActivity(sandboxId: string): Promise<boolean> {
    return this.deps.store.touchActivity(sandboxId, this.iso());
  }

  /** Status and reason of sandboxes by id, without opening anything sealed (for other services' views). */
  async statuses(
    ids: string[],
  ): Promise<Map<string, { id: string; userId: string; status: SandboxStatus; detail: string | null }>> {
    const found = await this.deps.store.batchGet(ids);
    const out = new Map<string, { id: string; userId: string; status: SandboxStatus; detail: string | null }>();
    for (const [id, r] of found)
      if (!r.deletedAt) out.set(id, { id, userId: r.userId, status: r.status, detail: r.detail ?? null });
    return out;
  }
}
