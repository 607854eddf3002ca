import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { logger } from '#shared/logging.ts';
import {
  BWRAP_PROGRAM_DIR,
  bwrapArgs,
  bwrapLauncher,
  seatbeltArgs,
  tmpDirOf,
  type Containment,
  type SandboxView,
} from '#shared/sandboxes/runtime/containment.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import {
  awsOnlyNotice,
  NOTICE_STATE,
  SandboxStartError,
  type ClaimCandidate,
  type InstanceRef,
  type InstanceStopped,
  type RunningInstance,
  type RuntimeState,
  type SandboxRuntime,
  type StandbyRequest,
  type StandbyRuntime,
  type StartRequest,
} from '#shared/sandboxes/runtime/sandbox-runtime.ts';

export interface ProcessRuntimeOptions {
  /** Sandboxes live under `<dataDir>/sandboxes/<id>/` (workspace/, home/, tmp/, sandbox.log). */
  dataDir: string;
  /** The checkout: like the data dir, never visible to a contained sandbox. */
  projectRoot: string;
  /** How each process is contained (`detectContainment()`); 'none' runs it as a plain child process. */
  containment: Containment;
  /** The pre-built sandbox program (the directory of `main.mjs`): what `{sandbox_program}` in a spec's command runs. */
  programDir?: string;
  /**
   * Uncontained, sandboxes start only for these users (the local user); anyone's when undefined
   * (`npm start -- --allow-uncontained`). Ignored when contained.
   */
  uncontainedUsers?: string[];
  /** Called when a process ends without being asked to. */
  onStopped: (event: InstanceStopped) => void;
  /** Called when a warm standby's process ends, bound or not (its pool item goes). */
  onStandbyStopped?: (standbyId: string) => void;
  /** How long a process gets after SIGTERM before SIGKILL. */
  graceMs?: number;
}

interface Instance {
  /** The sandbox it runs for; unset while it is an unbound standby. */
  sandboxId?: string;
  /** Set when it started as a warm standby. */
  standbyId?: string;
  generation: number;
  child: ChildProcess;
  exited: Promise<void>;
  stopRequested: boolean;
  /** The end of the program's stderr, for a readable detail when it dies. */
  tail: string;
}

const TAIL_CHARS = 2000;

/** In a spec's command: the pre-built sandbox program (`main.mjs` of `programDir`). */
export const PROGRAM_PLACEHOLDER = '{sandbox_program}';
const PROGRAM_ENTRY = 'main.mjs';

/** The live (not zombie) processes of process group `pgid`, with their command names (Linux /proc). */
function groupMembers(pgid: number): { pid: number; comm: string }[] {
  const members: { pid: number; comm: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z')
        members.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    } catch {
      // Gone meanwhile.
    }
  }
  return members;
}

/** Resolves once process group `pgid` has no live process left, or after `ms`. */
async function groupGone(pgid: number, ms: number): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline && groupMembers(pgid).length; )
    await new Promise((r) => setTimeout(r, 20));
}

/** Whether `command` names an executable file (a path, or a name on PATH), as spawn would find it. */
function executable(command: string, path: string): boolean {
  const candidates = command.includes('/')
    ? [command]
    : path
        .split(delimiter)
        .filter(isAbsolute)
        .map((dir) => join(dir, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

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
        return entry.level === 'warn' || entry.level === 'error'
          ? [[entry.message, entry.error].filter(Boolean).join(': ')]
          : [];
      } catch {
        return [line];
      }
    });
  return lines.slice(-3).join(' | ').slice(-500);
}

/**
 * Sandboxes as child processes (the local default), contained by bubblewrap or Seatbelt (see
 * containment.ts): each sees its own workspace and home, a read-only system and the program, and
 * nothing of the data dir, the checkout, the server or other sandboxes. Its environment holds only
 * what it needs. A process runs in its own process group, so stopping it also stops what the agent
 * spawned (and with bubblewrap, the end of its pid namespace ends everything in it).
 */
export class ProcessSandboxRuntime implements SandboxRuntime {
  private readonly instances = new Map<string, Instance>();
  /** Standbys by standby id (bound ones stay here too, under their sandbox in `instances` as well). */
  private readonly standbyInstances = new Map<string, Instance>();
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

  start(req: StartRequest): Promise<{ ref: string; state: RuntimeState; runningAt?: string }> {
    return this.serial(req.sandboxId, async () => {
      const current = this.instances.get(req.sandboxId);
      if (current && current.generation > req.generation) {
        throw new SandboxStartError(`Superseded by a newer start (generation ${current.generation})`);
      }
      if (current?.generation === req.generation)
        return { ref: String(current.child.pid), state: { containment: this.options.containment } };
      if (current) await this.kill(current);
      if (!this.mayRun(req.userId)) {
        throw new SandboxStartError(
          "Sandboxes run uncontained on this server (neither bubblewrap nor Seatbelt is available), so it starts only its local user's; install bubblewrap, or restart it with --allow-uncontained",
        );
      }
      const instance = await this.spawnProgram(this.sandboxDir(req.sandboxId), req.spec, {
        SANDBOX_ID: req.sandboxId,
        BRIDGE_URL: req.bridgeUrl,
        ENROLLMENT_TOKEN: req.enrollmentToken,
      });
      instance.sandboxId = req.sandboxId;
      instance.generation = req.generation;
      this.instances.set(req.sandboxId, instance);
      const notice = awsOnlyNotice(req.options);
      return {
        ref: String(instance.child.pid),
        state: { containment: this.options.containment, ...(notice ? { [NOTICE_STATE]: notice } : {}) },
        // A process runs from its spawn: no provisioning, no image pull.
        runningAt: new Date().toISOString(),
      };
    });
  }

  private mayRun(userId: string): boolean {
    const { containment, uncontainedUsers } = this.options;
    return containment !== 'none' || !uncontainedUsers || uncontainedUsers.includes(userId);
  }

  /**
   * Runs the spec's program in `dir` (workspace/, home/, tmp/, sandbox.log), contained as configured,
   * with `identity` (a sandbox's id and enrollment token, or a standby's id and pool credential) and
   * nothing else of the server's environment. What happens when it ends depends on what it is then
   * (a sandbox's instance, or a standby), so a standby bound later reports as its sandbox.
   */
  private async spawnProgram(dir: string, spec: SandboxSpec, identity: Record<string, string>): Promise<Instance> {
    const { containment } = this.options;
    const programPath =
      containment === 'bwrap'
        ? join(BWRAP_PROGRAM_DIR, PROGRAM_ENTRY)
        : this.options.programDir && join(this.options.programDir, PROGRAM_ENTRY);
    const [command, ...specArgs] = spec.command ?? [];
    if (!command) throw new SandboxStartError(`Sandbox spec "${spec.id}" has no command to run`);
    if (specArgs.includes(PROGRAM_PLACEHOLDER) && !this.options.programDir) {
      throw new SandboxStartError(
        `Sandbox spec "${spec.id}" runs ${PROGRAM_PLACEHOLDER}, which this server did not build`,
      );
    }
    const args = specArgs.map((arg) => (arg === PROGRAM_PLACEHOLDER ? programPath! : arg));
    const workspace = join(dir, 'workspace');
    const home = join(dir, 'home');
    const tmp = tmpDirOf(dir);
    for (const d of [workspace, home, tmp]) mkdirSync(d, { recursive: true });
    const path = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
    // `node` means this very Node binary, so a sandbox runs on the server's version.
    const program = command === 'node' ? process.execPath : command;
    if (!executable(program, path)) throw new SandboxStartError(`Could not run "${command}": no such executable`);
    const env: Record<string, string> = {
      PATH: path,
      HOME: home,
      // bubblewrap gives a private tmpfs /tmp; elsewhere the sandbox's own directory.
      TMPDIR: containment === 'bwrap' ? '/tmp' : tmp,
      ...identity,
      WORKSPACE_DIR: workspace,
      // The program exits when this process is gone, even if that happens before it could look.
      // Contained, it cannot see or signal this process (its own pid namespace; Seatbelt's
      // same-sandbox rule): it watches its stdin, a pipe this process holds, instead.
      ...(containment === 'none' ? { SANDBOX_PARENT_PID: String(process.pid) } : { SANDBOX_PARENT_STDIN: '1' }),
      ...spec.initial_env,
    };
    const view: SandboxView = {
      workspace,
      home,
      tmp,
      programDir: this.options.programDir,
      hidden: [this.options.dataDir, this.options.projectRoot],
    };
    const [file, argv] =
      containment === 'bwrap'
        ? [bwrapLauncher()[0]!, [...bwrapLauncher().slice(1), ...bwrapArgs(view), '--', program, ...args]]
        : containment === 'seatbelt'
          ? ['/usr/bin/sandbox-exec', [...seatbeltArgs(view), program, ...args]]
          : [program, args];
    const child = spawn(file, argv, {
      cwd: workspace,
      env,
      stdio: [containment === 'none' ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    // Never written to; the kernel closes it when this process ends, however it ends.
    child.stdin?.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new SandboxStartError(`Could not run "${command}": ${err.message}`)));
    });
    const log = createWriteStream(join(dir, 'sandbox.log'), { flags: 'a' });
    // A delete right after the start may remove the directory before the log opens: the log goes, nothing else.
    log.on('error', () => undefined);
    let resolveExit!: () => void;
    const instance: Instance = {
      generation: 0,
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
    child.once('exit', async (code, signal) => {
      log.end();
      // Whatever the program left behind in its process group goes with it.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Nothing left.
      }
      // bubblewrap may exit before what it started is gone: stopped means everything is gone.
      if (containment === 'bwrap') await groupGone(child.pid!, 2000);
      const sandboxId = instance.sandboxId;
      if (sandboxId && this.instances.get(sandboxId) === instance) this.instances.delete(sandboxId);
      if (instance.standbyId) {
        if (this.standbyInstances.get(instance.standbyId) === instance) {
          this.standbyInstances.delete(instance.standbyId);
          // An unbound standby's directory holds nothing of anyone's.
          if (!sandboxId) rmSync(dir, { recursive: true, force: true });
        }
        this.options.onStandbyStopped?.(instance.standbyId);
      }
      resolveExit();
      if (instance.stopRequested || !sandboxId) return;
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const last = lastProblems(instance.tail);
      this.options.onStopped({
        sandboxId,
        generation: instance.generation,
        requested: false,
        detail: `The sandbox process ${how}${last ? `: ${last}` : ''}`,
      });
    });
    return instance;
  }

  /** Where unbound standbys run: `<dataDir>/pool/<standby id>/`, on the file system of the sandboxes' directories. */
  standbyDir(standbyId: string): string {
    if (!/^sb_[0-9a-f]{32}$/.test(standbyId)) throw new Error(`Unsafe standby id ${JSON.stringify(standbyId)}`);
    return join(this.options.dataDir, 'pool', standbyId);
  }

  /**
   * Local standbys: the program started in a pool directory, which the claim renames into the
   * sandbox's directory (same file system, so a rename, not a copy). bubblewrap bound the pool
   * directory's workspace and home at spawn: a bind mount follows the directory, not its name, so
   * the standby keeps its paths and sees the same directories under the sandbox's name outside.
   * Uncontained, the binding names the new paths. Seatbelt's profile is made of paths fixed at
   * spawn, so there starts stay cold. A directory cannot be swapped into a running bubblewrap: a
   * sandbox whose directory exists (a resume) starts cold; on AWS a resume restores its snapshot
   * into a standby like a new sandbox.
   */
  readonly standbys: StandbyRuntime = {
    revision: (spec) =>
      createHash('sha256')
        .update(JSON.stringify([spec.command, spec.initial_env, spec.working_dir, this.options.programDir]))
        .digest('hex')
        .slice(0, 16),
    capacity: () => 'process',
    coldReason: (start: ClaimCandidate) => {
      if (this.options.containment === 'seatbelt')
        return "local standbys do not run under Seatbelt (its profile names paths fixed at spawn, and the claim renames the standby's directory)";
      if (!this.mayRun(start.userId)) return "uncontained, this server starts only its local user's sandboxes";
      if (existsSync(this.sandboxDir(start.sandboxId)))
        return "the sandbox's workspace is a directory here already, and a standby's mounts are fixed at spawn (local standbys serve new sandboxes)";
      return undefined;
    },
    bindingPaths: (sandboxId) => {
      if (this.options.containment !== 'none') return null;
      const dir = this.sandboxDir(sandboxId);
      return { workspace: join(dir, 'workspace'), home: join(dir, 'home'), tmp: tmpDirOf(dir) };
    },
    startStandby: async (req: StandbyRequest) => {
      const dir = this.standbyDir(req.standbyId);
      const instance = await this.spawnProgram(dir, req.spec, {
        STANDBY_ID: req.standbyId,
        BRIDGE_URL: req.bridgeUrl,
        POOL_TOKEN: req.poolToken,
      });
      instance.standbyId = req.standbyId;
      this.standbyInstances.set(req.standbyId, instance);
      return { ref: String(instance.child.pid) };
    },
    bindStandby: (standbyId, _ref, req) =>
      this.serial(req.sandboxId, async () => {
        const instance = this.standbyInstances.get(standbyId);
        if (!instance || instance.sandboxId) throw new Error('the standby process is gone');
        if (this.instances.has(req.sandboxId)) throw new Error('the sandbox has a process already');
        const target = this.sandboxDir(req.sandboxId);
        mkdirSync(join(this.options.dataDir, 'sandboxes'), { recursive: true });
        renameSync(this.standbyDir(standbyId), target);
        instance.sandboxId = req.sandboxId;
        instance.generation = req.generation;
        this.instances.set(req.sandboxId, instance);
        return { ref: String(instance.child.pid), state: { containment: this.options.containment } };
      }),
    stopStandby: async (standbyId) => {
      const instance = this.standbyInstances.get(standbyId);
      if (instance && !instance.sandboxId) await this.kill(instance);
      if (!instance?.sandboxId) rmSync(this.standbyDir(standbyId), { recursive: true, force: true });
    },
  };

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
      // maxRetries: a process of the sandbox may still be writing as it dies (ENOTEMPTY on the last rmdir).
      rmSync(this.sandboxDir(instance.sandboxId), { recursive: true, force: true, maxRetries: 5 });
      return { done: true, state: {} };
    });
  }

  async list(): Promise<RunningInstance[]> {
    return [...this.instances].map(([sandboxId, i]) => ({
      sandboxId,
      generation: i.generation,
      ref: String(i.child.pid),
    }));
  }

  /** Stops every process (workspaces kept): the local stack's shutdown, so nothing outlives it. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.standbyInstances]
        .filter(([, i]) => !i.sandboxId)
        .map(([id]) => this.standbys.stopStandby(id, undefined)),
    );
    await Promise.all(
      [...this.instances.keys()].map((id) =>
        this.serial(id, async () => {
          const current = this.instances.get(id);
          if (current) await this.kill(current);
        }),
      ),
    );
  }

  /** SIGTERM to the process group, SIGKILL after the grace period; resolves once the process is gone. */
  private async kill(instance: Instance): Promise<void> {
    instance.stopRequested = true;
    const pid = instance.child.pid!;
    const signal = (sig: NodeJS.Signals, target = -pid) => {
      try {
        process.kill(target, sig);
      } catch {
        // Already gone.
      }
    };
    // bubblewrap dies at SIGTERM and takes the sandbox with it (--die-with-parent): a graceful stop
    // signals the program inside instead, which saves its state and exits, and bubblewrap follows.
    // A program that bubblewrap has not started yet has nothing to save: then the group gets it.
    const inside =
      this.options.containment === 'bwrap'
        ? groupMembers(pid).filter((m) => m.comm !== 'bwrap' && m.comm !== 'setpriv')
        : [];
    if (inside.length) for (const member of inside) signal('SIGTERM', member.pid);
    else signal('SIGTERM');
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
