import { spawn } from 'node:child_process';

export interface CommandOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Output beyond this many characters is cut from the middle, with a note saying how much. */
  maxOutputChars: number;
}

export interface CommandResult {
  output: string;
  /** null when the command was killed (time-out) */
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
}

/**
 * Keeps the first and last half of a stream's text and counts what falls between, so a command that
 * prints gigabytes costs a bounded amount of memory.
 */
class BoundedText {
  #head = '';
  #tail = '';
  #dropped = 0;
  readonly #half: number;

  constructor(max: number) {
    this.#half = Math.max(1, Math.floor(max / 2));
  }

  push(chunk: string): void {
    if (this.#head.length < this.#half) {
      const room = this.#half - this.#head.length;
      this.#head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (!chunk) return;
    this.#tail += chunk;
    if (this.#tail.length > this.#half) {
      this.#dropped += this.#tail.length - this.#half;
      this.#tail = this.#tail.slice(-this.#half);
    }
  }

  get truncated(): boolean {
    return this.#dropped > 0;
  }

  toString(): string {
    if (!this.#dropped) return this.#head + this.#tail;
    return `${this.#head}\n[... output truncated: ${this.#dropped} characters omitted ...]\n${this.#tail}`;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const groupAlive = (pid: number): boolean => {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Runs shell commands and remembers the process groups that outlive them (`server &`), to kill on close. */
export class ShellRunner {
  readonly #liveGroups = new Set<number>();

  /**
   * Runs `command` with bash in its own process group (so a time-out kills its children too), stdout
   * and stderr interleaved as they arrive. Never rejects: a command that cannot start reports it in
   * the output with exit code 127.
   */
  run(command: string, options: CommandOptions): Promise<CommandResult> {
    return runCommand(command, options, this.#liveGroups);
  }

  /** Kills every process group started by this runner that may still be running. */
  killAll(): void {
    for (const pid of this.#liveGroups) killGroup(pid);
    this.#liveGroups.clear();
  }
}

function runCommand(command: string, options: CommandOptions, liveGroups: Set<number>): Promise<CommandResult> {
  return new Promise((resolve) => {
    const out = new BoundedText(options.maxOutputChars);
    const child = spawn('bash', ['-c', command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid;
    if (pid) liveGroups.add(pid);
    let timedOut = false;
    let settled = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (pid) killGroup(pid);
    }, options.timeoutMs);

    const finish = (exitCode: number | null, extra?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (extra) out.push(extra);
      let output = out.toString();
      if (timedOut) {
        output += `${output && !output.endsWith('\n') ? '\n' : ''}[The command timed out after ${options.timeoutMs / 1000} s and was stopped.]`;
      }
      if (pid && !groupAlive(pid)) liveGroups.delete(pid);
      resolve({ output, exitCode: timedOut ? null : exitCode, timedOut, truncated: out.truncated });
    };

    child.stdout.setEncoding('utf8').on('data', (c: string) => out.push(c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => out.push(c));
    child.on('error', (err) => finish(127, `failed to start the command: ${err.message}`));
    child.on('close', (code) => finish(code));
    child.on('exit', (code) => {
      // A background process (`server &`) can hold the pipes open after bash exits: don't wait for it.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code);
      }, 200).unref();
    });
  });
}
