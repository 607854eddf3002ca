import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BWRAP_PROGRAM_DIR,
  bwrapArgs,
  SEATBELT_PROFILE,
  seatbeltArgs,
  uncontainedWarning,
  type SandboxView,
} from '#shared/sandboxes/runtime/containment.ts';
import { ProcessSandboxRuntime } from '#shared/sandboxes/runtime/process-sandbox-runtime.ts';
import { SandboxStartError } from '#shared/sandboxes/runtime/sandbox-runtime.ts';

const view: SandboxView = {
  workspace: '/data/sandboxes/s1/workspace',
  home: '/data/sandboxes/s1/home',
  tmp: '/data/sandboxes/s1/tmp',
  programDir: '/repo/.build/sandbox/abc',
  hidden: ['/data', '/repo', '/usr/local/src/acs'],
};

/** The pairs `flag a b` of an argument list. */
const binds = (args: string[], flag: string) =>
  args.flatMap((a, i) => (a === flag ? [[args[i + 1], args[i + 2]]] : []));

describe('bubblewrap arguments', () => {
  const args = bwrapArgs(view);

  it('binds read-write only the workspace and home, at their own paths', () => {
    expect(binds(args, '--bind')).toEqual([
      [view.workspace, view.workspace],
      [view.home, view.home],
    ]);
  });

  it('mounts the system and the program read-only, and nothing of the data dir or the checkout', () => {
    const ro = binds(args, '--ro-bind');
    expect(ro).toContainEqual(['/usr', '/usr']);
    expect(ro).toContainEqual([view.programDir, BWRAP_PROGRAM_DIR]);
    for (const [source] of [...ro, ...binds(args, '--bind')]) {
      expect(source === '/data' || source === '/repo' || source === '/').toBe(false);
      if (source!.startsWith('/repo')) expect(source).toBe(view.programDir);
    }
    // A hidden path under a system directory is covered by an empty tmpfs.
    expect(args.join(' ')).toContain('--tmpfs /usr/local/src/acs');
  });

  it('gives a private /tmp and /proc, its own pid, ipc and uts namespaces, a read-only root, and ends with the server', () => {
    const text = args.join(' ');
    for (const part of [
      '--tmpfs /tmp',
      '--proc /proc',
      '--dev /dev',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--remount-ro /',
      '--die-with-parent',
      `--chdir ${view.workspace}`,
    ]) {
      expect(text).toContain(part);
    }
    // Loopback is shared on purpose (the bridge); see docs/architecture.md.
    expect(text).not.toContain('--share-net');
    expect(text).not.toContain('--unshare-net');
  });

  it('never puts the environment (the enrollment token) on the command line', () => {
    expect(args.join(' ')).not.toContain('--setenv');
  });
});

describe('the Seatbelt profile (macOS; checked as text, it cannot run here)', () => {
  it('denies by default and allows reads of the system, writes only to the parameters', () => {
    expect(SEATBELT_PROFILE.startsWith('(version 1)\n(deny default)\n')).toBe(true);
    const writable = /\(allow file-read\* file-write\*([\s\S]*?)\n(\(|$)/.exec(SEATBELT_PROFILE)![1]!;
    expect(writable).toContain('(subpath (param "WORKSPACE"))');
    expect(writable).toContain('(subpath (param "HOME"))');
    expect(writable).toContain('(subpath (param "TMP"))');
    expect(writable).not.toMatch(/subpath "\//);
    // No whole-disk or user-directory read.
    expect(SEATBELT_PROFILE).not.toMatch(
      /\(subpath "\/"\)|\/Users|\/private\/tmp|\/private\/var\/folders|\(allow file-read\*\)/,
    );
    // Other processes (the server's environment, other sandboxes) only for this sandbox's own.
    expect(SEATBELT_PROFILE).toContain('(allow process-info* (target same-sandbox))');
    expect(SEATBELT_PROFILE).toContain('(allow signal (target same-sandbox))');
    expect(SEATBELT_PROFILE).not.toMatch(/\(allow process-info\*\)|\(allow signal\)/);
  });

  it('passes the paths as parameters, never the data dir or the checkout', () => {
    const args = seatbeltArgs(view);
    expect(args.slice(0, 2)).toEqual(['-p', SEATBELT_PROFILE]);
    const params = Object.fromEntries(
      args.filter((_, i) => args[i - 1] === '-D').map((d) => d.split('=') as [string, string]),
    );
    expect(params).toMatchObject({
      WORKSPACE: view.workspace,
      HOME: view.home,
      TMP: view.tmp,
      PROGRAM_DIR: view.programDir,
    });
    expect(Object.values(params)).not.toContain('/data');
    expect(Object.values(params)).not.toContain('/repo');
  });
});

describe('without containment', () => {
  it("starts only the local user's sandboxes, with a start error that says how to allow others", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-uncontained-'));
    const runtime = new ProcessSandboxRuntime({
      dataDir,
      projectRoot: dataDir,
      containment: 'none',
      uncontainedUsers: ['dev'],
      onStopped: () => undefined,
      graceMs: 1000,
    });
    const spec = {
      id: 'sleeper',
      command: ['node', '-e', 'setInterval(() => {}, 60000)'],
      created_at: '2025-11-01T00:00:00Z',
      initial_env: {},
      working_dir: '/w',
      cpu: null,
      memory: null,
    };
    const request = (userId: string) => ({
      sandboxId: `s${userId}`,
      userId,
      generation: 1,
      spec,
      enrollmentToken: 'enr_x',
      bridgeUrl: 'http://127.0.0.1:9',
    });
    try {
      const err = await runtime.start(request('mallory')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SandboxStartError);
      expect((err as SandboxStartError).detail).toContain('--allow-uncontained');
      const started = await runtime.start(request('dev'));
      expect(started.state).toEqual({ containment: 'none' });
    } finally {
      await runtime.stopAll();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('warns at start with how to install bubblewrap', () => {
    expect(uncontainedWarning('linux')).toMatch(/UNCONTAINED.*apt-get install bubblewrap/);
    expect(uncontainedWarning('darwin')).toContain('sandbox-exec');
  });
});
