import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');

describe('formatting and lint', () => {
  // `biome ci` is the formatter's check and the linter together (biome.json); `npm run format` fixes most of it.
  it('every source file is the formatter output and passes the lint rules', () => {
    let output = '';
    let code = 0;
    try {
      execFileSync(process.execPath, [biome, 'ci', '--colors=off', '--max-diagnostics=20', '.'], {
        cwd: root,
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (error) {
      const e = error as { status: number; stdout: string; stderr: string };
      code = e.status;
      output = `${e.stdout}\n${e.stderr}`;
    }
    expect(output, 'run `npm run format` to fix').toBe('');
    expect(code).toBe(0);
  });
});
