import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { bundleStats, esbuildOptions } from '#infra/bundle.ts';
import { lambdaEntries } from '#infra/functions.ts';
import { routes } from '#shared/routes.ts';

/** Code that exists only for the laptop deployment and must never reach a Lambda bundle. */
const LOCAL_ONLY = [/^infra\/local\//, /^shared\/wiring\/local\.ts$/, /node_modules\/dynalite\//, /process-sandbox-runtime/, /local-sealer/];

const localInputs = (metafile: Metafile) => Object.keys(metafile.inputs).filter((input) => LOCAL_ONLY.some((re) => re.test(input)));

async function metafileOf(entry: string): Promise<Metafile> {
  const result = await build({ ...esbuildOptions(entry), write: false, metafile: true, outdir: 'out' });
  return result.metafile;
}

describe('Lambda bundles (the options CDK uses)', () => {
  it('bundles every route entry', () => {
    expect(lambdaEntries()).toEqual(expect.arrayContaining(routes.map((r) => r.entry)));
  });

  it.each(lambdaEntries())('%s carries no local-only code and bundles the AWS SDK it uses', async (entry) => {
    const metafile = await metafileOf(entry);
    expect(localInputs(metafile)).toEqual([]);
    // Bundled, not external: no bare import of an AWS SDK package is left in the output.
    const [output] = Object.values(metafile.outputs);
    expect(output!.imports.filter((i) => i.external && i.path.startsWith('@aws-sdk/'))).toEqual([]);
  });

  it.each(lambdaEntries())('%s loads as an ES module in a bare Node process', async (entry) => {
    // Catches what only shows at load time, such as a CommonJS dependency's dynamic require.
    const stats = await bundleStats(entry);
    expect(stats.bytes).toBeGreaterThan(0);
  });

  it('puts the DynamoDB client inside the authorizer bundle (the SDK is bundled, not taken from the runtime)', async () => {
    const inputs = Object.keys((await metafileOf('functions/auth/authorizer.ts')).inputs);
    expect(inputs.some((i) => i.includes('node_modules/@aws-sdk/client-dynamodb/'))).toBe(true);
  });

  it('would catch local-only code: the local stack itself fails the check', async () => {
    const found = localInputs(await metafileOf('infra/local/stack.ts'));
    expect(found).toEqual(expect.arrayContaining(['infra/local/gateway.ts', 'shared/wiring/local.ts']));
    expect(found.some((i) => i.includes('node_modules/dynalite/'))).toBe(true);
  });

  it('reports size and the median load time of a bundle over several processes (for npm run bench)', async () => {
    const stats = await bundleStats('functions/health/get.ts', 3);
    expect(stats.bytes).toBeGreaterThan(1000);
    expect(Number.isFinite(stats.loadMs)).toBe(true);
    expect(stats.loadMs).toBeGreaterThan(0);
  });
});
