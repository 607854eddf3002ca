import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { logger } from '#shared/logging.ts';
import {
  SandboxStartError,
  type InstanceRef,
  type InstanceStopped,
  type RunningInstance,
  type RuntimeState,
  type SandboxRuntime,
  type StartRequest,
} from '#shared/sandboxes/sandbox-runtime.ts';

export interface ProcessRuntimeOptions {
  /** Sandboxes live under `<dataDir>/sandboxes/<id>/` (workspace/, home/, sandbox.log). */
  dataDir: string;
  /** The directory commands run in (the repository root, so `sandbox/main.ts` resolves). */
  projectRoot: string;
  /** Called when a process ends without being asked to. */
  onStopped: (event: InstanceStopped) => void;
  /** How long a process gets after SIGTERM before SIGKILL. */
  graceMs?: number;
}

interface Instance {
  generation: number;
  child: ChildProcess;
  exited: Promise<void>;
  stopRequested: boolean;
  /** The end of the program's stderr, for a readable detail when it dies. */
  tail: string;
}

const TAIL_CHARS = 2000;

/**
 * The end of the program's stderr that explains a death: its warn/error log lines (JSON) and any
 * plain text (a stack trace), the last three, cut to 500 characters.
 */
export function lastProblems(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { level?: string; message?: string; error?: string };
        return entry.level === 'warn' || entry.level === 'error' ? [[entry.message, entry.error].filter(Boolean).join(': ')] : [];
      } catch {
        return [line];
      }
    });
  return lines.slice(-3).join(' | ').slice(-500);
}

/**
 * Sandboxes as child processes (the local default). Each gets its own workspace directory and
 * home, and an environment holding only what it needs: nothing of the server's environment. A
 * process runs in its own process group, so stopping it also stops what the agent spawned.
 */
export class ProcessSandboxRuntime implements SandboxRuntime {
  private readonly instances = new Map<string, Instance>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly graceMs: number;

  constructor(private readonly options: ProcessRuntimeOptions) {
    this.graceMs = options.graceMs ?? 5000;
  }

  sandboxDir(sandboxId: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(sandboxId)) throw new Error(`Unsafe sandbox id ${JSON.stringify(sandboxId)}`);
    return join(this.options.dataDir, 'sandboxes', sandboxId);
  }

  workspaceDir(sandboxId: string): string {
    return join(this.sandboxDir(sandboxId), 'workspace');
  }

  start(req: StartRequest): Promise<{ ref: string; state: RuntimeState }> {
    return this.serial(req.sandboxId, async () => {
      const current = this.instances.get(req.sandboxId);
      if (current && current.generation > req.generation) {
        throw new SandboxStartError(`Superseded by a newer start (generation ${current.generation})`);
      }
      if (current?.generation === req.generation) return { ref: String(current.child.pid), state: {} };
      if (current) await this.kill(current);
      const [command, ...args] = req.spec.command ?? [];
      if (!command) throw new SandboxStartError(`Sandbox spec "${req.spec.id}" has no command to run`);
      const dir = this.sandboxDir(req.sandboxId);
      const workspace = this.workspaceDir(req.sandboxId);
      const home = join(dir, 'home');
      mkdirSync(workspace, { recursive: true });
      mkdirSync(home, { recursive: true });
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        HOME: home,
        SANDBOX_ID: req.sandboxId,
        BRIDGE_URL: req.bridgeUrl,
        ENROLLMENT_TOKEN: req.enrollmentToken,
        WORKSPACE_DIR: workspace,
        // The program exits when this process is gone, even if that happens before it could look.
        SANDBOX_PARENT_PID: String(process.pid),
        ...req.spec.initial_env,
      };
      // `node` means this very Node binary, so a sandbox runs on the server's version.
      const child = spawn(command === 'node' ? process.execPath : command, args, {
        cwd: this.options.projectRoot,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', (err) => reject(new SandboxStartError(`Could not run "${command}": ${err.message}`)));
      });
      const log = createWriteStream(join(dir, 'sandbox.log'), { flags: 'a' });
      let resolveExit!: () => void;
      const instance: Instance = {
        generation: req.generation,
        child,
        exited: new Promise<void>((r) => (resolveExit = r)),
        stopRequested: false,
        tail: '',
      };
      child.stdout!.pipe(log, { end: false });
      child.stderr!.on('data', (chunk: Buffer) => {
        log.write(chunk);
        instance.tail = (instance.tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
      });
      child.once('exit', (code, signal) => {
        log.end();
        // Whatever the program left behind in its process group goes with it.
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // Nothing left.
        }
        if (this.instances.get(req.sandboxId) === instance) this.instances.delete(req.sandboxId);
        resolveExit();
        if (instance.stopRequested) return;
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        const last = lastProblems(instance.tail);
        this.options.onStopped({
          sandboxId: req.sandboxId,
          generation: req.generation,
          requested: false,
          detail: `The sandbox process ${how}${last ? `: ${last}` : ''}`,
        });
      });
      this.instances.set(req.sandboxId, instance);
      return { ref: String(child.pid), state: {} };
    });
  }

  stop(instance: InstanceRef): Promise<void> {
    return this.serial(instance.sandboxId, async () => {
      const current = this.instances.get(instance.sandboxId);
      if (current && current.generation === instance.generation) await this.kill(current);
    });
  }

  async status(instance: InstanceRef): Promise<'running' | 'stopped'> {
    return this.instances.get(instance.sandboxId)?.generation === instance.generation ? 'running' : 'stopped';
  }

  destroy(instance: InstanceRef): Promise<{ done: boolean; state: RuntimeState }> {
    return this.serial(instance.sandboxId, async () => {
      const current = this.instances.get(instance.sandboxId);
      if (current) await this.kill(current);
      rmSync(this.sandboxDir(instance.sandboxId), { recursive: true, force: true });
      return { done: true, state: {} };
    });
  }

  async list(): Promise<RunningInstance[]> {
    return [...this.instances].map(([sandboxId, i]) => ({ sandboxId, generation: i.generation, ref: String(i.child.pid) }));
  }

  /** Stops every process (workspaces kept): the local stack's shutdown, so nothing outlives it. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.instances.keys()].map((id) => this.serial(id, async () => {
      const current = this.instances.get(id);
      if (current) await this.kill(current);
    })));
  }

  /** SIGTERM to the process group, SIGKILL after the grace period; resolves once the process is gone. */
  private async kill(instance: Instance): Promise<void> {
    instance.stopRequested = true;
    const pid = instance.child.pid!;
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(-pid, sig);
      } catch {
        // Already gone.
      }
    };
    signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      instance.exited.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      logger.warn('Sandbox process ignored SIGTERM; killing it', { pid });
      signal('SIGKILL');
      await instance.exited;
    }
  }

  /** Runs operations on one sandbox one after another, so a start and a stop never interleave. */
  private serial<T>(sandboxId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(sandboxId) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.queues.set(sandboxId, settled);
    void settled.then(() => {
      if (this.queues.get(sandboxId) === settled) this.queues.delete(sandboxId);
    });
    return next;
  }
}
