/**
 * The program that runs inside every sandbox (a child process locally, a Fargate task on AWS).
 * It checks in over the bridge (which makes the sandbox RUNNING), heartbeats, and takes commands
 * (command-channel.ts: pushed over the bridge socket where there is one, else long-polled) until it
 * is told to stop. It takes no inbound connections.
 *
 * Environment: SANDBOX_ID, BRIDGE_URL, ENROLLMENT_TOKEN (one-time), WORKSPACE_DIR; or, for a warm
 * standby, STANDBY_ID and POOL_TOKEN instead of the first and the third (the binding brings them); SANDBOX_SNAPSHOTS=1
 * (AWS: the workspace is restored from its snapshot at start, saved after agent steps that changed
 * files and at stop, through the bridge's presigned requests); SANDBOX_IMAGE_CHECK=1 (a user's image:
 * exits with a code naming what the agent needs and the image lacks); BRIDGE_SOCKET_URL (AWS, from the task
 * definition: the WebSocket commands are pushed over, and a standby's wake-up; unset, the program long-polls);
 * POOL_HEARTBEAT_SECONDS (a standby on its pool socket: how often it calls its wait route, default 20, under the
 * claim's 30 s freshness); POLL_WAIT_SECONDS and, locally,
 * SANDBOX_PARENT_PID (the server: the program exits when it is gone) or, contained (bubblewrap,
 * Seatbelt) where the server cannot be seen, SANDBOX_PARENT_STDIN=1 (stdin is a pipe the server
 * holds: its end means the server is gone, even after a kill -9) optionally.
 */
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { constants, generateKeyPairSync, privateDecrypt } from 'node:crypto';
import { BridgeClient, isUnauthorized, PoolClient, type BridgeCommand } from './bridge-client.ts';
import { CommandChannel, sleep } from './command-channel.ts';
import { missingTool } from './image-check.ts';
import { PoolChannel } from './pool-channel.ts';
import { Snapshotter } from './snapshots.ts';
import { parsePayload, readWorkspace, replyBody } from './workspace-reads.ts';
import { conversationCommands, WORKSPACE_READ_COMMAND, type PoolBinding } from '#shared/protocol.ts';

export const VERSION = '0.1.0';

/** One JSON line on stderr (the runtime keeps stderr: its end becomes the detail of a crash). */
function log(level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, message, time: new Date().toISOString(), ...fields })}\n`);
}

export interface SandboxContext {
  sandboxId: string;
  workspaceDir: string;
  bridge: BridgeClient;
  /** Ends the program after the current command (acknowledged first). */
  stop(reason: string): void;
  /** Marks agent activity, reported with the next heartbeat (what keeps the sandbox from idling out). */
  markActive(): void;
}

export type CommandHandler = (command: BridgeCommand, ctx: SandboxContext) => Promise<void>;

/**
 * The program's own commands. The conversation commands (`start_conversation`, `send_message`, `pause`,
 * `run`, `respond_to_confirmation`, ...) come from `ConversationRunner.handlers()` (`conversations.ts`)
 * and join these in `runSandbox`. Anything in neither is acknowledged and logged.
 */
export const commandHandlers: Record<string, CommandHandler> = {
  stop: async (command, ctx) => {
    const reason = (command.payload as { reason?: string } | null)?.reason ?? 'asked by the control plane';
    ctx.stop(`stop command: ${reason}`);
  },
  // A read of the workspace (workspace-reads.ts), answered on the bridge; one whose route gave up is skipped.
  [WORKSPACE_READ_COMMAND]: async (command, ctx) => {
    const payload = parsePayload(command.payload);
    if (!payload || Date.parse(payload.expires_at) < Date.now()) return;
    const result = await readWorkspace(ctx.workspaceDir, payload.op, payload.path);
    await ctx.bridge.reply(command.seq, replyBody(payload, result));
  },
};

/** Commands that are not the agent's work: they neither keep the sandbox from idling nor trigger a snapshot. */
const passive: ReadonlySet<string> = new Set(['stop', WORKSPACE_READ_COMMAND]);

/** Runs one command; an unknown type or a failing handler is logged, never fatal. */
export async function dispatch(command: BridgeCommand, ctx: SandboxContext, handlers = commandHandlers): Promise<void> {
  const handler = Object.hasOwn(handlers, command.type) ? handlers[command.type] : undefined;
  if (!handler) {
    log('warn', 'Unknown command; acknowledged and ignored', { seq: command.seq, type: command.type });
    return;
  }
  try {
    if (!passive.has(command.type)) ctx.markActive();
    await handler(command, ctx);
  } catch (err) {
    log('error', 'Command failed', { seq: command.seq, type: command.type, error: (err as Error).message });
  }
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/**
 * A warm standby (STANDBY_ID and POOL_TOKEN instead of SANDBOX_ID and ENROLLMENT_TOKEN): checks in
 * on its pool routes with a fresh RSA public key and waits until a claim binds it to a sandbox: on its
 * pool socket where BRIDGE_SOCKET_URL is set (woken by the claim, a `wait=0` call every 20 s its
 * heartbeat), else by long-polling (each wait its heartbeat; pool-channel.ts). The binding's enrollment token is sealed to that key; it is then exchanged
 * at the sandbox's check-in exactly as a cold start exchanges the one in its environment. Returns
 * null when drained or stopped first.
 */
async function waitForBinding(
  bridgeUrl: string,
  signal: AbortSignal,
): Promise<{ sandboxId: string; enrollmentToken: string; paths: PoolBinding['paths'] } | null> {
  const standbyId = required('STANDBY_ID');
  const pool = new PoolClient(bridgeUrl, standbyId, required('POOL_TOKEN'), signal);
  // The pool credential is worth nothing once the binding is delivered; still, keep it from the agent's commands.
  delete process.env.POOL_TOKEN;
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  let wait = 20;
  for (let attempt = 0; ; attempt++) {
    try {
      wait = (await pool.checkIn(pem, VERSION)).wait_seconds;
      break;
    } catch (err) {
      if (isUnauthorized(err) || attempt >= 8 || signal.aborted) {
        log('error', 'Pool check-in failed', { error: (err as Error).message });
        return null;
      }
      await sleep(500 * 2 ** Math.min(attempt, 4), signal);
    }
  }
  log('info', 'Standing by', { standbyId });
  const out = await new PoolChannel({
    pool,
    socketUrl: process.env.BRIDGE_SOCKET_URL || undefined,
    waitSeconds: wait,
    signal,
    log,
    ...(Number(process.env.POOL_HEARTBEAT_SECONDS) > 0
      ? { heartbeatMs: Number(process.env.POOL_HEARTBEAT_SECONDS) * 1000 }
      : {}),
  }).run();
  if (!out?.binding) return null;
  const token = privateDecrypt(
    { key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    Buffer.from(out.binding.enrollment_sealed, 'base64'),
  ).toString();
  log('info', 'Bound', { standbyId, sandboxId: out.binding.sandbox_id });
  return { sandboxId: out.binding.sandbox_id, enrollmentToken: token, paths: out.binding.paths };
}

/** The program; resolves to its exit code. */
export async function runSandbox(): Promise<number> {
  const standby = Boolean(process.env.STANDBY_ID);
  // A standby learns its sandbox id and enrollment token from its binding; a cold start has them in its environment.
  let sandboxId = standby ? '' : required('SANDBOX_ID');
  let workspaceDir = required('WORKSPACE_DIR');
  if (process.env.SANDBOX_IMAGE_CHECK === '1') {
    const missing = missingTool();
    if (missing) {
      log('error', 'The sandbox image lacks a tool the agent needs', { tool: missing.tool });
      return missing.exitCode;
    }
  }
  const bridgeUrl = required('BRIDGE_URL').replace(/\/+$/, '');
  let enrollmentToken = standby ? '' : required('ENROLLMENT_TOKEN');
  // Nothing else needs the token; keep it out of what commands the agent runs can read.
  delete process.env.ENROLLMENT_TOKEN;
  mkdirSync(workspaceDir, { recursive: true });
  process.chdir(workspaceDir);

  const stopper = new AbortController();
  let stopReason: string | undefined;
  const stop = (reason: string) => {
    if (stopReason) return;
    stopReason = reason;
    log('info', 'Stopping', { reason });
    stopper.abort();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // Locally the server is the parent: if it dies, so does this program. The server names itself in
  // SANDBOX_PARENT_PID, since it may be gone before this program, still loading, could read its ppid
  // (on AWS the variable is unset and the parent never changes).
  const parentPid = Number(process.env.SANDBOX_PARENT_PID) || process.ppid;
  const parentGone = () => {
    try {
      process.kill(parentPid, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  };
  const parentWatch = setInterval(() => parentGone() && stop('the parent process is gone'), 1000);
  if (process.env.SANDBOX_PARENT_STDIN === '1') {
    const gone = () => stop('the parent process is gone (its pipe closed)');
    process.stdin.once('end', gone).once('close', gone).once('error', gone).resume();
  }

  // A standby loads the agent before it checks in to the pool, so a claimed start does not wait for the import.
  const runnerModule = standby ? import('./conversations.ts') : undefined;
  runnerModule?.catch(() => undefined);
  if (standby) {
    // Ready only once the agent is loaded: a claim must not find the program busy importing it (measured
    // locally: about 100 ms added to a warm start right after a refill).
    await runnerModule;
    const bound = await waitForBinding(bridgeUrl, stopper.signal);
    if (!bound) {
      clearInterval(parentWatch);
      return 0;
    }
    ({ sandboxId, enrollmentToken } = bound);
    // Uncontained, the claim renamed this standby's directory: its new paths come with the binding.
    if (bound.paths) {
      workspaceDir = bound.paths.workspace;
      process.env.HOME = bound.paths.home;
      process.env.TMPDIR = bound.paths.tmp;
      process.chdir(workspaceDir);
    }
  }
  const bridge = new BridgeClient(bridgeUrl, sandboxId, stopper.signal);
  let checkIn: Awaited<ReturnType<BridgeClient['checkIn']>>;
  for (let attempt = 0; ; attempt++) {
    try {
      checkIn = await bridge.checkIn(enrollmentToken, {
        version: VERSION,
        capabilities: [...Object.keys(commandHandlers), ...conversationCommands],
      });
      break;
    } catch (err) {
      if (isUnauthorized(err) || attempt >= 8 || stopReason) {
        log('error', 'Check-in failed', { error: (err as Error).message });
        clearInterval(parentWatch);
        return stopReason ? 0 : 3;
      }
      await sleep(500 * 2 ** Math.min(attempt, 4), stopper.signal);
    }
  }
  log('info', 'Checked in', { sandboxId, version: VERSION });

  // AWS: the workspace comes back from its last snapshot before anything reads it. A failed restore
  // ends the program: carrying on would save an empty workspace over the good snapshot.
  const snapshotter = process.env.SANDBOX_SNAPSHOTS === '1' ? new Snapshotter(bridge, workspaceDir, log) : undefined;
  if (snapshotter) {
    try {
      const began = performance.now();
      await snapshotter.restore();
      // The start's restore phase, reported at once (a phase of its own on the record and in the metrics).
      await bridge.heartbeat(false, Math.round(performance.now() - began)).catch(() => undefined);
    } catch (err) {
      log('error', 'Restoring the workspace failed', { error: (err as Error).message });
      clearInterval(parentWatch);
      return 4;
    }
  }
  // After agent activity settles (a step's events), save the workspace if its files changed.
  let settle: NodeJS.Timeout | undefined;
  const afterActivity = () => {
    if (!snapshotter || stopReason) return;
    clearTimeout(settle);
    settle = setTimeout(() => void snapshotter.requestIfChanged(), 3000);
  };

  let active = false;
  const ctx: SandboxContext = {
    sandboxId,
    workspaceDir,
    bridge,
    stop,
    markActive: () => {
      active = true;
      afterActivity();
    },
  };
  // Conversations: their commands join the handlers; the ones this workspace held before a pause come back.
  // Loaded only now: the agent and its SDKs take a while to import, and checking in (RUNNING) and
  // watching the parent process should not wait for them.
  const { ConversationRunner } = await (runnerModule ?? import('./conversations.ts'));
  const runner = new ConversationRunner({ bridge, workspaceDir, markActive: ctx.markActive, log });
  const handlers: Record<string, CommandHandler> = { ...commandHandlers };
  for (const [type, handle] of Object.entries(runner.handlers())) handlers[type] = (command) => handle(command);
  await runner.restore();
  const wait = Math.min(Number(process.env.POLL_WAIT_SECONDS) || checkIn.poll_wait_seconds, checkIn.poll_wait_seconds);
  const channel = new CommandChannel({
    bridge,
    socketUrl: process.env.BRIDGE_SOCKET_URL || undefined,
    waitSeconds: wait,
    signal: stopper.signal,
    log,
  });
  const heartbeat = async () => {
    const wasActive = active;
    active = false;
    try {
      const { status, command_seq: queued } = await bridge.heartbeat(wasActive);
      if (status !== 'RUNNING') stop(`the sandbox is ${status}`);
      else if (typeof queued === 'number') channel.noteQueued(queued);
    } catch (err) {
      if (isUnauthorized(err)) stop('the session key was refused');
      else if (!stopReason) {
        active ||= wasActive;
        log('warn', 'Heartbeat failed', { error: (err as Error).message });
      }
    }
  };
  const heartbeats = setInterval(() => void heartbeat(), Math.max(1, checkIn.heartbeat_seconds) * 1000);

  try {
    await channel.run(async (command) => {
      await dispatch(command, ctx, handlers);
      try {
        await bridge.ack(command.seq);
      } catch (err) {
        log('warn', 'Acknowledging a command failed', { seq: command.seq, error: (err as Error).message });
      }
    });
  } catch (err) {
    if (!isUnauthorized(err)) throw err;
    stop('the session key was refused');
  }
  clearInterval(heartbeats);
  clearInterval(parentWatch);
  // Sessions save their state after every step; closing delivers the events still queued.
  await runner.closeAll();
  // Pause, SIGTERM (the task's stop timeout leaves 120 s) or stop: save what changed since the last snapshot.
  clearTimeout(settle);
  await snapshotter?.requestIfChanged();
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runSandbox().then(
    (code) => process.exit(code),
    (err: unknown) => {
      log('error', 'Sandbox program failed', { error: (err as Error).message });
      process.exit(1);
    },
  );
}
