import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { esbuildOptions, REPO_ROOT, sandboxImageOptions } from '#infra/bundle.ts';

/**
 * Route bundles carry zod/mini (about 45 KB with zod's core) and its English messages, never zod's
 * classic API (about 100 KB more and ~10 ms more of every cold start). Two entries stand for all:
 * test/infra/bundles.test.ts builds every one.
 */
async function zodInputs(options: Parameters<typeof build>[0]): Promise<string[]> {
  const result = await build({ ...options, write: false, metafile: true, outdir: 'out' });
  // What the output holds: esbuild reads modules it then drops (every locale mini re-exports).
  const [output] = Object.values(result.metafile!.outputs);
  return Object.entries(output!.inputs)
    .filter(([input, { bytesInOutput }]) => input.includes('node_modules/zod/') && bytesInOutput > 0)
    .map(([input]) => input);
}
const classic = (inputs: string[]) => inputs.filter((i) => i.includes('zod/v4/classic/'));

describe('the schema library a Lambda bundle carries', () => {
  it.each(['functions/settings/get.ts', 'functions/bridge/events.ts'])(
    '%s: zod/mini with the English locale only, no zod classic',
    async (entry) => {
      const inputs = await zodInputs(await esbuildOptions(entry));
      expect(classic(inputs)).toEqual([]);
      expect(inputs.some((i) => i.includes('zod/v4/mini/'))).toBe(true);
      expect(inputs.filter((i) => i.includes('zod/v4/locales/'))).toEqual([
        expect.stringMatching(/zod\/v4\/locales\/en\.js$/),
      ]);
    },
  );

  it('takes zod from shared/zod.ts everywhere in shared/ and functions/ (mini, with its English messages installed)', () => {
    const direct = ['shared', 'functions']
      .flatMap((dir) =>
        readdirSync(join(REPO_ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f)),
      )
      .filter((f) => f.endsWith('.ts') && f !== join('shared', 'zod.ts'))
      .filter((f) => /from 'zod[/']/.test(readFileSync(join(REPO_ROOT, f), 'utf8')));
    expect(direct).toEqual([]);
  });

  it('would catch a module that imports zod classic', async () => {
    const contents = "import * as z from 'zod'; export const s = z.object({ a: z.string() });";
    const inputs = await zodInputs({
      ...(await esbuildOptions('functions/health/get.ts')),
      entryPoints: undefined,
      stdin: { contents, resolveDir: REPO_ROOT, loader: 'ts' },
    });
    expect(classic(inputs).length).toBeGreaterThan(0);
  });

  it("lets the sandbox image's one-file program (sandbox/Dockerfile) load: mini is initialized before the protocol's schemas are built", async () => {
    const out = await build({ ...sandboxImageOptions('main.mjs'), write: false });
    const dir = mkdtempSync(join(tmpdir(), 'acs-image-program-'));
    try {
      writeFileSync(join(dir, 'main.mjs'), out.outputFiles[0]!.contents);
      // Without its environment the program stops at its first check, after every module loaded.
      const run = spawnSync(process.execPath, [join(dir, 'main.mjs')], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH },
        timeout: 20_000,
      });
      expect(`${run.stdout}${run.stderr}`).toContain('SANDBOX_ID is not set');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
