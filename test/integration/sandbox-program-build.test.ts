import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSandboxProgram } from '#infra/local/sandbox-program.ts';

const root = mkdtempSync(join(tmpdir(), 'acs-program-'));
const buildDir = join(root, '.build');
afterAll(() => rmSync(root, { recursive: true, force: true }));

const write = (file: string, text: string) => {
  mkdirSync(join(root, 'sandbox'), { recursive: true });
  writeFileSync(join(root, 'sandbox', file), text);
};
const run = (dir: string) =>
  spawnSync(process.execPath, [join(dir, 'main.mjs')], { encoding: 'utf8', cwd: tmpdir() }).stdout.trim();

describe('the pre-built sandbox program', () => {
  it('runs on a bare Node, is reused while its inputs are unchanged, and rebuilt when one changes', async () => {
    write(
      'main.ts',
      "import { greeting } from './dep.ts';\nconst later = await import('./lazy.ts');\nconsole.log(greeting, later.value);\n",
    );
    write('dep.ts', "export const greeting: string = 'hello';\n");
    write('lazy.ts', 'export const value = 1;\n');
    const first = await buildSandboxProgram(buildDir, root);
    expect(run(first)).toBe('hello 1');
    expect(await buildSandboxProgram(buildDir, root)).toBe(first);

    // A change in a file the entry imports (even lazily) is a new build in a new directory; the old one stays.
    write('lazy.ts', 'export const value = 2;\n');
    const second = await buildSandboxProgram(buildDir, root);
    expect(second).not.toBe(first);
    expect(run(second)).toBe('hello 2');
    expect(run(first)).toBe('hello 1');

    // Back to the first sources: the first output again (named by its content).
    write('lazy.ts', 'export const value = 1;\n');
    expect(await buildSandboxProgram(buildDir, root)).toBe(first);
  });
});
