import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BoundedText } from '#sandbox/agent/tools/bounded-text.ts';

export interface TerminalOptions {
  cwd: string;
  /** The shell's whole environment (nothing else of the program's environment leaks in). */
  env: () => Record<string, string>;
  /** Output beyond this many characters is cut from the middle, with a note. */
  maxOutputChars: number;
  /** A command with no new output for this long returns what it printed so far, exit code -1 (OpenHands: 30 s). */
  noChangeTimeoutMs: number;
  /** A command without an explicit `timeout` returns after this long at most, still running. */
  hardTimeoutMs: number;
  /** A call's `timeout` is capped at this. */
  maxTimeoutMs: number;
  /** Where the tmux socket and shell start-up file live (default: a fresh directory under the OS tmp). */
  runtimeDir?: string;
}

export interface TerminalRequest {
  command: string;
  /** Type `command` into the running process instead of starting a new command. */
  isInput?: boolean;
  /** Seconds to wait before returning (the command keeps running); disables the no-change time-out. */
  timeoutSeconds?: number;
}

/** What the shell's prompt says after a command (OpenHands' CmdOutputMetadata). */
export interface CommandMetadata {
  exit_code: number;
  pid: number;
  username: string | null;
  hostname: string | null;
  working_dir: string | null;
  py_interpreter_path: string | null;
  prefix: string;
  suffix: string;
}

export interface TerminalResult {
  /** The command's output (echo of the command excluded), cut in the middle when long. */
  output: string;
  /** -1 while the command still runs (a time-out, a refusal); otherwise its exit code. */
  exitCode: number;
  /** The call returned before the command ended. */
  timedOut: boolean;
  /** The command was not run (another one still runs, or nothing runs to send input to). */
  refused: boolean;
  truncated: boolean;
  metadata: CommandMetadata;
  /** Output, prefix and suffix together: what the model reads. */
  text: string;
}

const SPECIAL_KEYS = /^C-[a-z]$/i;
const POLL_MIN_MS = 5;
const POLL_MAX_MS = 250;

const run = (file: string, args: string[], env: Record<string, string>): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(file, args, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${stderr || err.message}`.trim())) : resolve(stdout),
    );
  });

/**
 * One long-lived interactive bash per conversation, in a tmux server of its own (its socket in a
 * private directory, so no other sandbox or conversation shares it). `cd`, exported variables, an
 * activated virtualenv and background jobs persist between calls, as in OpenHands' terminal tool.
 *
 * Each command starts on a cleared pane; the shell's prompt is a marker carrying the exit code and
 * working directory, so the end of a command is the marker's appearance. A command that prints
 * nothing new for `noChangeTimeoutMs` returns what it printed so far with exit code -1 and a note;
 * the next call can send '' to keep waiting, input with `isInput`, or `C-c` to interrupt it.
 */
export class Terminal {
  readonly #o: TerminalOptions;
  readonly #token = Math.random().toString(36).slice(2, 10);
  #dir: string | null = null;
  #socket = '';
  #shellPid = 0;
  #starting: Promise<void> | null = null;
  /** A command started by `run` that has not shown its end marker yet. */
  #running: { command: string; echoLines: number; shown: number } | null = null;
  /** Said once, in the next result: why the shell is new. */
  #pendingNote: string | null = null;
  #everStarted = false;
  /** False once a tmux call found the shell gone; the next call starts a new one. */
  #alive = false;
  #closed = false;

  constructor(options: TerminalOptions) {
    this.#o = options;
  }

  /** The next result starts with this note (e.g. that the sandbox was resumed and the shell is new). */
  announce(note: string): void {
    this.#pendingNote = note;
  }

  async run(req: TerminalRequest): Promise<TerminalResult> {
    if (this.#closed) throw new Error('The terminal is closed.');
    await this.#ensureShell();
    const command = req.command;
    const special = SPECIAL_KEYS.test(command.trim());
    if (this.#running) {
      if (command.trim() && !req.isInput && !special) {
        return this.#result('', -1, {
          refused: true,
          suffix: `[Your command "${command.slice(0, 200)}" was NOT executed: the previous command is still running. Send an empty command '' to wait for it, send input to it with is_input: true, or interrupt it with "C-c" (is_input: true) before running a new command.]`,
        });
      }
      try {
        if (special) await this.#tmux('send-keys', '-t', 'agent', command.trim());
        else if (command) await this.#tmux(...(await this.#typing(command)));
      } catch {
        this.#alive = false;
        this.#running = null;
        return this.#result('', -1, { suffix: '[The shell session ended while the command ran.]' });
      }
      return this.#wait(req);
    }
    if (req.isInput || !command.trim()) {
      return this.#result('', -1, {
        refused: true,
        suffix: req.isInput
          ? '[No command is running, so there is nothing to send input to. Send the command without is_input.]'
          : '[No command is running: give a command to run.]',
      });
    }
    let typed = command.replace(/\n+$/, '');
    // Several lines go as one compound command, so the shell runs them all before its next prompt.
    if (typed.includes('\n') && !special) typed = `{ ${typed}\n}`;
    this.#running = { command, echoLines: special ? 0 : typed.split('\n').length, shown: 0 };
    // A fresh pane for each command (the output is what lies between the echoed command and the next
    // prompt); one tmux call for all of it, as each call is a process.
    const send = async () => {
      const keys = special ? ['send-keys', '-t', 'agent', command.trim()] : await this.#typing(typed);
      await this.#tmux('send-keys', '-R', '-t', 'agent', ';', 'clear-history', '-t', 'agent', ';', ...keys);
    };
    try {
      await send();
    } catch {
      // The shell is gone since the last call (`exit`, or its tmux server was killed): start a new one, once.
      this.#alive = false;
      await this.#ensureShell();
      this.#running = { command, echoLines: special ? 0 : typed.split('\n').length, shown: 0 };
      await send();
    }
    return this.#wait(req);
  }

  /** Kills the shell and what it runs; the next command starts a new one, saying so. */
  async reset(): Promise<void> {
    await this.#starting?.catch(() => undefined);
    this.#kill();
    this.#pendingNote = '[The shell was reset: this is a new session in the workspace.]';
  }

  /** Kills the shell, everything it started that is still in its process tree, and the tmux server. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#starting?.catch(() => undefined);
    this.#kill();
  }

  // --- internals -----------------------------------------------------------------------------

  async #ensureShell(): Promise<void> {
    if (this.#starting) await this.#starting.catch(() => undefined);
    if (this.#dir && this.#alive) return;
    if (this.#everStarted && this.#dir) {
      this.#kill();
      this.#pendingNote =
        '[The previous shell session ended (e.g. `exit`), so this is a new one: the working directory, variables and background jobs of the old one are gone.]';
    }
    this.#starting = this.#start();
    await this.#starting;
  }

  async #start(): Promise<void> {
    this.#running = null;
    const dir = this.#o.runtimeDir
      ? mkdtempSync(join(this.#o.runtimeDir, 'sh-'))
      : mkdtempSync(join(tmpdir(), 'agent-sh-'));
    this.#dir = dir;
    this.#socket = join(dir, 'tmux.sock');
    const t = this.#token;
    // The prompt is the end marker, with what PROMPT_COMMAND noted (it runs first, so `$?` is the command's).
    const ps1 = `\\n###ACS${t}{"exit_code":"$__acs_ec","pid":"$!","username":"\\u","hostname":"\\h","working_dir":"$PWD","py_interpreter_path":"$__acs_py"}ACS${t}###\\n`;
    writeFileSync(
      join(dir, 'bashrc'),
      [
        'set +H', // no history expansion: a "!" in a command stays a "!"
        "bind 'set disable-completion on' 2>/dev/null", // a tab typed into a heredoc stays a tab
        "bind 'set enable-bracketed-paste off' 2>/dev/null",
        // Bytes above 127 are text (UTF-8), not Meta keys: "é" must not run readline commands.
        "bind 'set input-meta on' 2>/dev/null; bind 'set output-meta on' 2>/dev/null; bind 'set convert-meta off' 2>/dev/null",
        'HISTFILE=/dev/null',
        'export VIRTUAL_ENV_DISABLE_PROMPT=1', // an activated virtualenv keeps the prompt (the end marker) as it is
        "PS2=''",
        // The exit code first; the Python lookup (a subshell) only when PATH changed (e.g. a virtualenv).
        'PROMPT_COMMAND=\'__acs_ec=$?; if [[ "$PATH" != "$__acs_path" ]]; then __acs_path=$PATH; __acs_py=$(type -P python3 || type -P python); fi\'',
        `PS1='${ps1}'`,
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'tmux.conf'),
      'set -g history-limit 100000\nset -g status off\nset -g remain-on-exit off\n',
    );
    const env = this.#o.env();
    await run(
      'tmux',
      [
        '-S',
        this.#socket,
        '-f',
        join(dir, 'tmux.conf'),
        'new-session',
        '-d',
        '-s',
        'agent',
        '-x',
        '1000',
        '-y',
        '100',
        '-c',
        this.#o.cwd,
        'bash',
        '--noprofile',
        '--rcfile',
        join(dir, 'bashrc'),
        '-i',
      ],
      env,
    ).catch((err: Error) => {
      rmSync(dir, { recursive: true, force: true });
      this.#dir = null;
      throw new Error(
        /ENOENT/.test(err.message)
          ? 'tmux is not installed here, and the shell needs it'
          : `the shell could not start: ${err.message}`,
      );
    });
    this.#shellPid = Number((await this.#tmux('display-message', '-p', '-t', 'agent', '#{pane_pid}')).trim());
    const end = Date.now() + 10_000;
    while (!(await this.#capture()).includes(`ACS${t}###`)) {
      if (Date.now() > end) throw new Error('the shell did not show its prompt within 10 s');
      await sleep(POLL_MIN_MS * 2);
    }
    this.#everStarted = true;
    this.#alive = true;
  }

  /**
   * Loads `text` into a paste buffer and returns the tmux arguments that type it and Enter. Through a
   * file because, as an argument, tmux would read a trailing ";" as its own command separator; in a call
   * of its own because tmux reads the file asynchronously (the call returns once it is loaded).
   */
  async #typing(text: string): Promise<string[]> {
    const enter = ['send-keys', '-t', 'agent', 'Enter'];
    if (!text.endsWith(';')) return ['send-keys', '-t', 'agent', '-l', '--', text, ';', ...enter];
    const file = join(this.#dir!, 'input');
    writeFileSync(file, text);
    await this.#tmux('load-buffer', '-b', 'typed', file);
    return ['paste-buffer', '-d', '-b', 'typed', '-t', 'agent', ';', ...enter];
  }

  #tmux(...args: string[]): Promise<string> {
    return run('tmux', ['-S', this.#socket, ...args], { PATH: process.env.PATH ?? '/usr/bin:/bin' });
  }

  #capture(): Promise<string> {
    return this.#tmux('capture-pane', '-p', '-J', '-t', 'agent', '-S', '-', '-E', '-');
  }

  /** Polls the pane until the end marker shows, the output stops changing for too long, or the time runs out. */
  async #wait(req: TerminalRequest): Promise<TerminalResult> {
    const running = this.#running!;
    const explicit =
      req.timeoutSeconds !== undefined ? Math.min(req.timeoutSeconds * 1000, this.#o.maxTimeoutMs) : null;
    const hardMs = explicit ?? this.#o.hardTimeoutMs;
    const started = Date.now();
    let lastChange = started;
    let last = '';
    let poll = POLL_MIN_MS;
    for (;;) {
      const content = await this.#capture().catch(() => null);
      if (content === null) {
        // The tmux server is gone (the shell exited): what ran is over.
        this.#running = null;
        this.#alive = false;
        return this.#result('', -1, { suffix: '[The shell session ended while the command ran.]' });
      }
      const marker = new RegExp(`###ACS${this.#token}(\\{.*?\\})ACS${this.#token}###`, 's').exec(content);
      const body = content
        .slice(0, marker ? marker.index : undefined)
        .split('\n')
        .slice(running.echoLines)
        .join('\n');
      const rest = body.slice(running.shown).replace(/\n+$/, '');
      const fresh = rest.replace(/^\n+/, '');
      if (marker) {
        this.#running = null;
        const meta = parseMeta(marker[1]!);
        return this.#result(fresh, meta.exit_code, { meta });
      }
      if (content !== last) {
        last = content;
        lastChange = Date.now();
        poll = POLL_MIN_MS;
      }
      const now = Date.now();
      if (explicit === null && now - lastChange >= this.#o.noChangeTimeoutMs) {
        running.shown += rest.length;
        return this.#result(fresh, -1, {
          timedOut: true,
          suffix: `[The command has no new output after ${this.#o.noChangeTimeoutMs / 1000} s and is still running. Send an empty command '' to keep waiting, send input with is_input: true, interrupt it with "C-c" (is_input: true), or give a timeout for long commands.]`,
        });
      }
      if (now - started >= hardMs) {
        running.shown += rest.length;
        return this.#result(fresh, -1, {
          timedOut: true,
          suffix: `[The command is still running after ${hardMs / 1000} s. Send an empty command '' to keep waiting, or interrupt it with "C-c" (is_input: true).]`,
        });
      }
      await sleep(poll);
      poll = Math.min(POLL_MAX_MS, Math.ceil(poll * 1.5));
    }
  }

  #result(
    raw: string,
    exitCode: number,
    o: { refused?: boolean; timedOut?: boolean; suffix?: string; meta?: Partial<CommandMetadata> },
  ): TerminalResult {
    const out = new BoundedText(this.#o.maxOutputChars);
    out.push(raw.trim() ? raw : '');
    const output = out.toString();
    const prefix = this.#pendingNote ?? '';
    this.#pendingNote = null;
    const suffix = o.suffix ?? `[The command completed with exit code ${exitCode}.]`;
    const metadata: CommandMetadata = {
      exit_code: exitCode,
      pid: -1,
      username: null,
      hostname: null,
      working_dir: null,
      py_interpreter_path: null,
      ...o.meta,
      prefix,
      suffix,
    };
    const text = [prefix, output, suffix].filter(Boolean).join('\n');
    return {
      output,
      exitCode,
      timedOut: Boolean(o.timedOut),
      refused: Boolean(o.refused),
      truncated: out.truncated,
      metadata,
      text,
    };
  }

  #kill(): void {
    if (this.#shellPid > 0) for (const pid of [...descendants(this.#shellPid), this.#shellPid]) signal(pid);
    this.#shellPid = 0;
    if (this.#dir) {
      execFile('tmux', ['-S', this.#socket, 'kill-server'], () => undefined);
      rmSync(this.#dir, { recursive: true, force: true });
      this.#dir = null;
    }
    this.#running = null;
  }
}

function parseMeta(json: string): Partial<CommandMetadata> & { exit_code: number } {
  try {
    const m = JSON.parse(json) as Record<string, string>;
    const pid = Number(m.pid);
    return {
      exit_code: Number(m.exit_code),
      pid: m.pid && Number.isFinite(pid) ? pid : -1,
      username: m.username || null,
      hostname: m.hostname || null,
      working_dir: m.working_dir || null,
      py_interpreter_path: m.py_interpreter_path || null,
    };
  } catch {
    // A working directory with a quote in its name breaks the JSON: keep the exit code.
    const code = /"exit_code":"(\d+)"/.exec(json);
    return { exit_code: code ? Number(code[1]) : -1 };
  }
}

/** Every process below `root`, from /proc (Linux): background jobs of the shell included. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [];
  }
  for (const name of entries) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
