import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleStats, esbuildOptions, loadStats, REPO_ROOT } from '#infra/bundle.ts';
import { lambdaEntries } from '#infra/functions.ts';
import { eventFunctions } from '#shared/functions.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/** Code that exists only for the laptop deployment and must never reach a Lambda bundle. */
const LOCAL_ONLY = [
  /^infra\/local\//,
  /^shared\/wiring\/local\.ts$/,
  /node_modules\/dynalite\//,
  /process-sandbox-runtime/,
  /local-sealer/,
];

const localInputs = (metafile: Metafile) =>
  Object.keys(metafile.inputs).filter((input) => LOCAL_ONLY.some((re) => re.test(input)));

interface Built {
  metafile: Metafile;
  contents: Uint8Array;
}
/** Each entry bundled once for every check of this file (one esbuild run per entry, about 141, the file's main cost). */
const built = new Map<string, Promise<Built>>();
function bundleOf(entry: string): Promise<Built> {
  let bundle = built.get(entry);
  if (!bundle) {
    bundle = esbuildOptions(entry)
      .then((options) => build({ ...options, write: false, metafile: true, outdir: 'out' }))
      .then((r) => ({
        metafile: r.metafile,
        contents: r.outputFiles[0]!.contents,
      }));
    built.set(entry, bundle);
  }
  return bundle;
}
const metafileOf = async (entry: string) => (await bundleOf(entry)).metafile;

const declarations = new Map<string, Declaration>([
  ...(routes as readonly RouteDef[]).map((r) => [r.entry, r] as const),
  ...eventFunctions.map((f) => [f.entry, f] as const),
]);
const sdkPackage = (inputs: string[], name: string) => inputs.some((i) => i.includes(`node_modules/@aws-sdk/${name}/`));
/** The bridge routes that sign a sandbox's snapshot upload or download. */
const signingEntries = ['functions/bridge/snapshot-upload.ts', 'functions/bridge/snapshot-download.ts'];

/**
 * The bounds of issue 9: sizes are deterministic for a given lockfile, so they are asserted (load times are not).
 * The largest was 550 KB until the SaaS work put the warm pool's claim with its suspension check, the binding
 * deadline and storage metering on the conversation start's path (552 KB after the route table lost the
 * other routes' grants): 560 KB. Issue 27's split by use case took the conversation reads and commands down
 * 39-45 KB each; the largest route (the legacy create, which starts) is 555 KB.
 */
const MEDIAN_ROUTE_KB = 450;
const LARGEST_ROUTE_KB = 560;

describe('Lambda bundles (the options CDK uses)', () => {
  it('bundles every route entry', () => {
    expect(lambdaEntries()).toEqual(expect.arrayContaining(routes.map((r) => r.entry)));
  });

  it.each(lambdaEntries())(
    '%s carries no local-only code and bundles the AWS SDK it uses, one copy of each package',
    async (entry) => {
      const metafile = await metafileOf(entry);
      expect(localInputs(metafile)).toEqual([]);
      // A package's own pinned copy of another (s3-presigned-post's client-s3) is resolved to ours (infra/bundle.ts).
      expect(Object.keys(metafile.inputs).filter((i) => /node_modules\/.*node_modules\//.test(i))).toEqual([]);
      // Bundled, not external: no bare import of an AWS SDK package is left in the output.
      const [output] = Object.values(metafile.outputs);
      expect(output!.imports.filter((i) => i.external && i.path.startsWith('@aws-sdk/'))).toEqual([]);
    },
  );

  it.each(lambdaEntries())(
    '%s carries the SDK clients its declaration calls for and no others, and no default credential chain',
    async (entry) => {
      const inputs = Object.keys((await metafileOf(entry)).inputs);
      const caps = declarations.get(entry)?.capabilities ?? [];
      expect(sdkPackage(inputs, 'client-kms'), 'KMS').toBe(caps.includes('seal') || caps.includes('unseal'));
      // Pausing builds the Fargate runtime to stop a task; only deletion and the snapshot routes sign for S3.
      const runtime = caps.includes('ecs:run') || caps.includes('ecs:stop') || caps.includes('ecs:describe');
      expect(sdkPackage(inputs, 'client-ecs'), 'ECS').toBe(runtime);
      expect(sdkPackage(inputs, 'client-efs'), 'EFS').toBe(false);
      // S3: the workspace snapshots, and the billing export's files.
      expect(sdkPackage(inputs, 'client-s3'), 'S3').toBe(
        caps.includes('s3:workspaces') || caps.includes('s3:workspaces:read') || caps.includes('billing:export'),
      );
      // No Lambda client anywhere: the asynchronous invokes (the stream's resend, a sandbox's snapshot
      // removal, the pool's refill) are one signed POST each (shared/lambda-event.ts), and only there.
      expect(sdkPackage(inputs, 'client-lambda'), 'Lambda').toBe(false);
      expect(inputs.includes('shared/lambda-event.ts'), 'Invoke').toBe(
        caps.includes('stream:resend') || caps.includes('snapshots:delete') || caps.includes('pool:refill'),
      );
      // Nor a Step Functions client: a claim's binding deadline is one signed StartExecution, where claims are made.
      expect(sdkPackage(inputs, 'client-sfn'), 'Step Functions').toBe(false);
      expect(inputs.includes('shared/wiring/aws/pool-deadline.ts'), 'StartExecution').toBe(
        caps.includes('pool:deadline'),
      );
      // The presigners only where snapshot requests are signed, not where objects are only checked or deleted.
      const signs = signingEntries.includes(entry);
      expect(sdkPackage(inputs, 's3-presigned-post'), 'presigned POST').toBe(signs);
      expect(sdkPackage(inputs, 's3-request-presigner'), 'request presigner').toBe(signs);
      // The management client where a push capability is declared, and nowhere else, except in the event
      // stream's functions: they share one wiring module (shared/wiring/aws/stream.ts) with its push builder.
      const pushes = caps.includes('commands:push') || caps.includes('stream:push') || caps.includes('stream:close');
      if (pushes || !entry.startsWith('functions/stream/'))
        expect(sdkPackage(inputs, 'client-apigatewaymanagementapi'), 'API Gateway management').toBe(pushes);
      // Lambda gives credentials in the environment: SSO, STS, INI and metadata providers are never bundled.
      for (const name of [
        'credential-provider-node',
        'credential-provider-sso',
        'credential-provider-ini',
        'nested-clients',
      ]) {
        expect(sdkPackage(inputs, name), name).toBe(false);
      }
    },
  );

  // A bundle carries its adapters' builders in a module of its own (infra/function-adapters.ts): the
  // function it makes must have the adapters the entry has outside Lambda, a replaced builder included.
  it.each([...signingEntries, 'functions/conversations/start.ts', 'functions/stream/connect.ts'])(
    'the bundle of %s has the adapters its entry derives outside Lambda',
    async (entry) => {
      const dir = mkdtempSync(join(tmpdir(), 'acs-wiring-'));
      try {
        const file = join(dir, 'index.mjs');
        writeFileSync(file, (await bundleOf(entry)).contents);
        const script = `const m = await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(JSON.stringify(m.handler.wiring.adapters));`;
        const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1' },
        });
        const unbundled = ((await import(`../../${entry}`)) as { handler: { wiring: { adapters: string[] } } }).handler
          .wiring.adapters;
        expect(JSON.parse(child.stdout || 'null'), child.stderr).toEqual(unbundled);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('gives a bundled SDK client the credentials Lambda puts in the environment, and a clear error without them', async () => {
    const contents =
      "import { DynamoDBClient } from '@aws-sdk/client-dynamodb'; const c = new DynamoDBClient({ region: 'eu-west-1' }); try { process.stdout.write(JSON.stringify(await c.config.credentials())); } catch (e) { process.stdout.write('ERR ' + e.message); }";
    const out = await build({
      ...(await esbuildOptions('functions/health/get.ts')),
      entryPoints: undefined,
      stdin: { contents, resolveDir: REPO_ROOT, loader: 'ts' },
      write: false,
      outdir: 'out',
    });
    const dir = mkdtempSync(join(tmpdir(), 'acs-creds-'));
    try {
      const file = join(dir, 'creds.mjs');
      writeFileSync(file, out.outputFiles[0]!.contents);
      const run = (env: Record<string, string>) =>
        spawnSync(process.execPath, [file], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } }).stdout;
      expect(
        JSON.parse(run({ AWS_ACCESS_KEY_ID: 'AKIDROLE', AWS_SECRET_ACCESS_KEY: 's', AWS_SESSION_TOKEN: 't' })),
      ).toEqual({ accessKeyId: 'AKIDROLE', secretAccessKey: 's', sessionToken: 't' });
      expect(run({})).toMatch(/^ERR No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('carries the route summaries only in the bundle that serves the OpenAPI document', async () => {
    const text = async (entry: string) => new TextDecoder().decode((await bundleOf(entry)).contents);
    const summary = (routes as readonly RouteDef[]).find((r) => r.id === 'authenticate')!.summary.slice(0, 40);
    expect(await text('functions/auth/authenticate.ts')).not.toContain(summary);
    expect(await text('functions/docs/openapi.ts')).toContain(summary);
  });

  it('carries no wiring guard: the static wiring test and the tier hold a bundle to its declaration', async () => {
    const text = new TextDecoder().decode((await bundleOf('functions/sandboxes/start.ts')).contents);
    // checkNeeds's refusal (shared/wiring/adapters.ts).
    expect(text).not.toContain('which its declaration does not name');
    // Nor the service factories' checks of their declarations, nor the stand-in for an absent adapter.
    expect(text).not.toContain('which its factory does not declare');
    expect(text).not.toContain('an adapter its declaration does not grant');
    // No Proxy at all: a production stack trace has no wiring frames.
    expect(text).not.toContain('new Proxy');
    // An adapter the function does not have still fails with a WiringError.
    expect(text).toContain('does not have the');
  });

  // Every route, the S3 ones included: the bridge's snapshot routes carry the S3 client (their
  // presigners only where they sign), the conversation starts ECS, KMS, DynamoDB and the management
  // client; the sandbox delete carries ECS and not S3 (the snapshot-removal function holds S3).
  it('keeps route bundles small: median and largest within the bounds', async () => {
    const kb: number[] = [];
    for (const route of routes as readonly RouteDef[]) {
      const size = (await bundleOf(route.entry)).contents.length / 1024;
      expect(size, route.entry).toBeLessThanOrEqual(LARGEST_ROUTE_KB);
      kb.push(size);
    }
    kb.sort((a, b) => a - b);
    expect(kb[Math.floor(kb.length / 2)]).toBeLessThanOrEqual(MEDIAN_ROUTE_KB);
  });

  it.each(lambdaEntries())('%s loads as an ES module in a bare Node process', async (entry) => {
    // Catches what only shows at load time, such as a CommonJS dependency's dynamic require.
    const dir = mkdtempSync(join(tmpdir(), 'acs-load-'));
    try {
      const file = join(dir, 'index.mjs');
      writeFileSync(file, (await bundleOf(entry)).contents);
      expect(loadStats(file, 1, entry).loadMs).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('puts the DynamoDB client inside the authorizer bundle (the SDK is bundled, not taken from the runtime)', async () => {
    const inputs = Object.keys((await metafileOf('functions/auth/authorizer.ts')).inputs);
    expect(inputs.some((i) => i.includes('node_modules/@aws-sdk/client-dynamodb/'))).toBe(true);
  });

  it('would catch local-only code: the local stack itself fails the check', async () => {
    const found = localInputs(await metafileOf('infra/local/stack.ts'));
    expect(found).toEqual(expect.arrayContaining(['infra/local/gateway.ts', 'shared/wiring/local.ts']));
  });

  it('reports size and the median load time of a bundle over several processes (for npm run bench)', async () => {
    const stats = await bundleStats('functions/health/get.ts', 3);
    expect(stats.bytes).toBeGreaterThan(1000);
    expect(Number.isFinite(stats.loadMs)).toBe(true);
    expect(stats.loadMs).toBeGreaterThan(0);
  });
});
