import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Terminal, type TerminalOptions } from '#sandbox/agent/tools/terminal.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function terminal(o: Partial<TerminalOptions> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'agent-term-'));
  const t = new Terminal({
    cwd: dir,
    env: () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }),
    maxOutputChars: 10_000,
    noChangeTimeoutMs: 600,
    hardTimeoutMs: 20_000,
    maxTimeoutMs: 60_000,
    ...o,
  });
  cleanups.push(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { t, dir };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !execFileSync('ps', ['-o', 'stat=', '-p', String(pid)])
      .toString()
      .trim()
      .startsWith('Z');
  } catch {
    return false;
  }
};

describe('Terminal (one persistent bash in a private tmux)', () => {
  it('keeps the working directory, exported variables and functions between calls, with exit codes and metadata', async () => {
    const { t, dir } = terminal();
    const first = await t.run({
      command: 'mkdir -p sub && cd sub && export GREETING=hello && greet() { echo "$GREETING from $(basename $PWD)"; }',
    });
    expect(first.exitCode).toBe(0);
    expect(first.metadata.working_dir).toBe(join(dir, 'sub'));
    const second = await t.run({ command: 'greet; echo err >&2; (exit 3)' });
    expect(second.output).toBe('hello from sub\nerr');
    expect(second.exitCode).toBe(3);
    expect(second.text).toContain('exit code 3');
    const multi = await t.run({ command: 'cd ..\necho "a!b"\npwd' });
    expect(multi.output).toBe(`a!b\n${dir}`);
    expect(multi.metadata).toMatchObject({ exit_code: 0, working_dir: dir });
    // Typed as they are: a trailing semicolon (tmux's own separator), tabs in a heredoc, non-ASCII text.
    expect((await t.run({ command: 'echo b \\;' })).output).toBe('b ;');
    expect((await t.run({ command: 'cat <<EOF\né\tü\nEOF' })).output).toBe('é       ü');
  });

  it('a command that outlives the soft time-out returns with -1; an empty command waits, C-c interrupts, a new command is refused meanwhile', async () => {
    const { t } = terminal();
    const slow = await t.run({ command: 'echo started; sleep 1.5; echo middle; sleep 30; echo never' });
    expect(slow).toMatchObject({ exitCode: -1, timedOut: true, output: 'started' });
    expect(slow.text).toMatch(/no new output after 0.6 s.*empty command/s);
    const refused = await t.run({ command: 'echo other' });
    expect(refused).toMatchObject({ refused: true, exitCode: -1 });
    expect(refused.text).toMatch(/NOT executed.*still running.*C-c/s);
    // Waiting with a timeout: the call returns after it, whatever the output does.
    const more = await t.run({ command: '', timeoutSeconds: 2.5 });
    expect(more.output).toBe('middle');
    expect(more.exitCode).toBe(-1);
    expect(more.text).toMatch(/still running after 2.5 s/);
    const stopped = await t.run({ command: 'C-c', isInput: true });
    expect(stopped.exitCode).toBe(130);
    expect(stopped.output).not.toContain('never');
    expect((await t.run({ command: 'echo after' })).output).toBe('after');
  });

  it('types input into a running process with is_input, and honours an explicit timeout instead of the soft one', async () => {
    const { t } = terminal();
    const asking = await t.run({ command: 'read -p "name? " name; echo "hi $name"' });
    expect(asking.exitCode).toBe(-1);
    const answered = await t.run({ command: 'Ada', isInput: true });
    expect(answered.output).toContain('hi Ada');
    expect(answered.exitCode).toBe(0);
    const quiet = await t.run({ command: 'sleep 1; echo done-quietly', timeoutSeconds: 10 });
    expect(quiet).toMatchObject({ exitCode: 0, output: 'done-quietly' });
    expect((await t.run({ command: 'nothing', isInput: true })).refused).toBe(true);
  });

  it('keeps an activated virtualenv between calls, and reports its interpreter', async () => {
    const { t, dir } = terminal();
    const made = await t.run({ command: 'python3 -m venv .venv && source .venv/bin/activate', timeoutSeconds: 60 });
    if (made.exitCode !== 0) return; // no venv module on this machine
    const which = await t.run({ command: 'command -v python' });
    expect(which.output).toBe(join(dir, '.venv/bin/python'));
    expect(which.metadata.py_interpreter_path).toBe(join(dir, '.venv/bin/python3'));
  });

  it('keeps background jobs running between calls and kills them on close', async () => {
    const { t } = terminal();
    await t.run({ command: 'sleep 300 & echo $! > bg.pid' });
    const pid = Number((await t.run({ command: 'cat bg.pid' })).output);
    expect((await t.run({ command: `kill -0 ${pid} && echo running` })).output).toBe('running');
    await t.close();
    expect(alive(pid)).toBe(false);
  });

  it('cuts long output in the middle with a note, and starts a new shell (saying so) after exit or a reset', async () => {
    const { t, dir } = terminal({ maxOutputChars: 1000 });
    const long = await t.run({ command: 'seq 1 20000' });
    expect(long.truncated).toBe(true);
    expect(long.output.startsWith('1\n2\n3\n')).toBe(true);
    expect(long.output.endsWith('20000')).toBe(true);
    expect(long.output).toMatch(/\[\.\.\. output truncated: \d+ characters omitted \.\.\.\]/);
    await t.run({ command: 'cd / && exit' });
    const fresh = await t.run({ command: 'pwd' });
    expect(fresh.output).toBe(dir);
    expect(fresh.text).toMatch(/previous shell session ended/);
    t.announce('[resumed]');
    expect((await t.run({ command: 'true' })).metadata.prefix).toBe('[resumed]');
  });

  it('works inside bubblewrap (read-only system, private /tmp, own pid namespace)', async () => {
    // bubblewrap is a prerequisite of the local stack (.ci/run installs it): without it this fails, never skips.
    execFileSync('bwrap', ['--version']);
    const ws = mkdtempSync(join(tmpdir(), 'agent-bwrap-'));
    cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
    const script = [
      "import { Terminal } from '#sandbox/agent/tools/terminal.ts';",
      "const t = new Terminal({ cwd: '/workspace', env: () => ({ PATH: '/usr/bin:/bin', HOME: '/workspace' }), maxOutputChars: 5000, noChangeTimeoutMs: 2000, hardTimeoutMs: 20000, maxTimeoutMs: 20000 });",
      "await t.run({ command: 'cd /tmp && export X=inside' });",
      "const r = await t.run({ command: 'echo $X $PWD; touch /usr/nope 2>&1 | head -c 80; echo' });",
      'process.stdout.write(JSON.stringify(r.output));',
      'await t.close();',
    ].join('\n');
    const repo = join(import.meta.dirname, '../..');
    // node_modules may be a link out of the checkout (a git worktree): bind where it really is.
    const modules = realpathSync(join(repo, 'node_modules'));
    const out = execFileSync(
      'bwrap',
      [
        '--ro-bind',
        '/usr',
        '/usr',
        '--ro-bind',
        '/lib',
        '/lib',
        '--ro-bind',
        '/lib64',
        '/lib64',
        '--ro-bind',
        '/bin',
        '/bin',
        '--ro-bind',
        '/etc',
        '/etc',
        // The private /tmp first: a checkout under /tmp (a CI clone) is bound over it, not hidden by it.
        '--tmpfs',
        '/tmp',
        '--ro-bind',
        repo,
        repo,
        '--ro-bind',
        modules,
        modules,
        '--bind',
        ws,
        '/workspace',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--unshare-pid',
        '--die-with-parent',
        '--chdir',
        repo,
        '--clearenv',
        '--setenv',
        'PATH',
        '/usr/bin:/bin',
        process.execPath,
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        script,
      ],
      { timeout: 30_000 },
    ).toString();
    const output = JSON.parse(out) as string;
    expect(output).toContain('inside /tmp');
    expect(output).toMatch(/Read-only file system/);
  });
});
