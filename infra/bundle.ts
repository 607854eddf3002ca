import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build, type BuildOptions } from 'esbuild';
import ts from 'typescript';
import { BUNDLED_CONSOLE_DIR, CONSOLE_FILES } from '#shared/http/console-assets.ts';
import { BUNDLED_DOCS_DIR, DOCS_ASSETS } from '#shared/http/docs-assets.ts';
import { buildConsole, CONSOLE_BUILD_DIR } from '#infra/console-build.ts';
import { builderModuleFor, loadFunctionAdapters } from '#infra/function-adapters.ts';

/** The repository root: entries in the route table are relative to it. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Matches the Lambda runtime in infra/constructs/functions.ts. */
export const NODE_TARGET = 'node24';

/**
 * ESM bundles may still meet a CommonJS `require` inside a dependency (e.g. of `node:` built-ins):
 * give them a real one.
 */
const BANNER =
  "import { createRequire as __acsCreateRequire } from 'node:module'; const require = __acsCreateRequire(import.meta.url);";

/**
 * One set of bundling choices for CDK and for the esbuild checks and benchmark: ESM, minified,
 * `module` before `main` (the AWS SDK's ES build tree-shakes to a fraction), and the AWS SDK
 * bundled rather than taken from the runtime, so the bundle runs the versions we tested.
 * `ACS_LAMBDA_BUNDLE`: a Lambda bundle carries no wiring guards (shared/wiring/adapters.ts `wire`,
 * shared/services.ts `servicesOf`).
 */
const shared = {
  minify: true,
  mainFields: ['module', 'main'],
  banner: BANNER,
  define: { 'process.env.ACS_LAMBDA_BUNDLE': '"true"' },
} as const;

/**
 * The route table as a Lambda bundle carries it: shared/routes.ts with the members only synthesis and
 * the OpenAPI document read (`summary`, `tag`, `entry`) replaced by '', and every route's `tables` and
 * `capabilities` emptied (a bundle runs without wiring guards, so nothing reads a declaration at run
 * time). Every bundle carries the whole table (an operation finds its route by id): the summaries were
 * about 12 KB of each, the grants about 10 KB. One file for every bundle, `.build/routes.runtime.ts`
 * (ignored by git), written when a bundle is first asked for.
 */
const SYNTH_ONLY = new Set(['summary', 'tag', 'entry']);
const GRANTS = new Set(['tables', 'capabilities']);
const RUNTIME_ROUTES = resolve(REPO_ROOT, '.build/routes.runtime.ts');

function writeRuntimeRoutes(): string {
  const source = resolve(REPO_ROOT, 'shared/routes.ts');
  const text = readFileSync(source, 'utf8');
  const file = ts.createSourceFile(source, text, ts.ScriptTarget.Latest, true);
  const cuts: [number, number, string][] = [];
  const nameOf = (p: ts.ObjectLiteralElementLike) =>
    ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) ? p.name.text : undefined;
  const visit = (node: ts.Node): void => {
    if (!ts.isObjectLiteralExpression(node)) {
      ts.forEachChild(node, visit);
      return;
    }
    // A route (it names its `entry`): its grants go.
    const route = node.properties.some((p) => nameOf(p) === 'entry');
    for (const p of node.properties) {
      const name = nameOf(p);
      if (!name || !ts.isPropertyAssignment(p)) ts.forEachChild(p, visit);
      else if (SYNTH_ONLY.has(name)) cuts.push([p.initializer.getStart(file), p.initializer.getEnd(), "''"]);
      else if (route && GRANTS.has(name))
        cuts.push([p.initializer.getStart(file), p.initializer.getEnd(), name === 'tables' ? '{}' : '[]']);
      else ts.forEachChild(p, visit);
    }
  };
  visit(file);
  let out = text;
  for (const [from, to, by] of cuts.reverse()) out = `${out.slice(0, from)}${by}${out.slice(to)}`;
  mkdirSync(dirname(RUNTIME_ROUTES), { recursive: true });
  // Written only when it changed: a bundle's input stays the same file for an unchanged table.
  if (!existsSync(RUNTIME_ROUTES) || readFileSync(RUNTIME_ROUTES, 'utf8') !== out) writeFileSync(RUNTIME_ROUTES, out);
  return RUNTIME_ROUTES;
}

/**
 * Lambda's credentials come in the environment: the SDK's default provider chain is swapped for a
 * small reader of those variables (infra/lambda-credentials.ts), the rest of the SDK is bundled as is.
 */
const ALIAS = {
  '@aws-sdk/credential-provider-node': resolve(REPO_ROOT, 'infra/lambda-credentials.ts'),
  // @aws-sdk/s3-presigned-post pins an older client-s3 of its own (for PutObjectCommand's endpoint
  // parameters): resolved to the one we install, a bundle carries one S3 client, not two (~70 KB).
  '@aws-sdk/client-s3': resolve(REPO_ROOT, 'node_modules/@aws-sdk/client-s3'),
};

/** The function that serves the OpenAPI document builds it from the route table: it keeps the summaries. */
const KEEPS_SUMMARIES = new Set(['functions/docs/openapi.ts']);

/**
 * The aliases of one entry's bundle: `ALIAS`, the route table as a bundle carries it, and the AWS
 * builders of that function's adapters alone (infra/function-adapters.ts; loaded by `loadFunctionAdapters`).
 */
let runtimeRoutes: string | undefined;
const aliasFor = (entry: string): Record<string, string> => {
  const builders = builderModuleFor(entry);
  const own: Record<string, string> = builders ? { '#shared/wiring/aws/builders.ts': builders } : {};
  if (KEEPS_SUMMARIES.has(entry)) return { ...ALIAS, ...own };
  runtimeRoutes ??= writeRuntimeRoutes();
  return { ...ALIAS, '#shared/routes.ts': runtimeRoutes, ...own };
};

/** The `bundling` of a NodejsFunction of `entry`. */
export const cdkBundling = (entry: string): BundlingOptions => ({
  ...shared,
  mainFields: [...shared.mainFields],
  format: OutputFormat.ESM,
  target: NODE_TARGET,
  externalModules: [],
  sourceMap: false,
  esbuildArgs: Object.fromEntries(Object.entries(aliasFor(entry)).map(([from, to]) => [`--alias:${from}`, to])),
});

/**
 * Files a function reads at run time, copied next to its bundle at bundle time (from the
 * installed packages, so synthesis stays offline): entry -> [source under the repository, target in the bundle].
 */
const consoleBuild = Object.values(CONSOLE_FILES).map((f): [string, string] => [
  `${relative(REPO_ROOT, CONSOLE_BUILD_DIR)}/${f}`,
  `${BUNDLED_CONSOLE_DIR}/${f}`,
]);
export const bundledFiles: Record<string, [string, string][]> = {
  'functions/docs/asset.ts': Object.keys(DOCS_ASSETS).map((f) => [
    `node_modules/swagger-ui-dist/${f}`,
    `${BUNDLED_DOCS_DIR}/${f}`,
  ]),
  'functions/console/page.ts': consoleBuild,
  'functions/console/callback.ts': consoleBuild,
  'functions/console/asset.ts': consoleBuild,
};

/** The bundling of one function: `cdkBundling`, plus a copy of the files it reads (`bundledFiles`). */
export function bundlingFor(entry: string): BundlingOptions {
  const files = bundledFiles[entry];
  if (!files) return cdkBundling(entry);
  // The console's functions carry its build: make sure it is current before CDK copies it.
  if (files === consoleBuild) buildConsole();
  return {
    ...cdkBundling(entry),
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (inputDir, outputDir) => [
        ...new Set(files.map(([, to]) => `mkdir -p "${outputDir}/${dirname(to)}"`)),
        ...files.map(([from, to]) => `cp "${inputDir}/${from}" "${outputDir}/${to}"`),
      ],
    },
  };
}

/** The same bundle through esbuild's API, for an entry relative to the repository root. */
export async function esbuildOptions(entry: string): Promise<BuildOptions> {
  await loadFunctionAdapters();
  return {
    ...shared,
    mainFields: [...shared.mainFields],
    banner: { js: BANNER },
    entryPoints: [resolve(REPO_ROOT, entry)],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: NODE_TARGET,
    external: [],
    alias: aliasFor(entry),
    logLevel: 'silent',
  };
}

/**
 * Size of an entry's bundle and the time a fresh Node process takes to load it (what a cold start
 * pays before the handler runs): the median of `loads` processes, as wall time and as the CPU time
 * the process spent (steadier on a shared machine). Used by `npm run bench`.
 */
export async function bundleStats(entry: string, loads = 1): Promise<{ bytes: number; loadMs: number; cpuMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'acs-bundle-'));
  try {
    const outfile = join(dir, 'index.mjs');
    await build({ ...(await esbuildOptions(entry)), outfile });
    return { bytes: statSync(outfile).size, ...loadStats(outfile, loads, entry) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Imports a built bundle in `loads` fresh Node processes: the median wall and CPU time of the import. */
export function loadStats(file: string, loads = 1, label = file): { loadMs: number; cpuMs: number } {
  const script = `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); const wall = performance.now() - t; const cpu = process.cpuUsage(c); process.stdout.write(JSON.stringify([wall, (cpu.user + cpu.system) / 1000]));`;
  const times: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < Math.max(1, loads); i++) {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        PATH: process.env.PATH,
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
    if (child.status !== 0)
      throw new Error(`Loading the bundle of ${label} failed: ${child.stderr || child.error?.message}`);
    const [wall, cpu] = JSON.parse(child.stdout) as [number, number];
    times.push(wall);
    cpus.push(cpu);
  }
  const median = (xs: number[]) => Math.round(xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]! * 10) / 10;
  return { loadMs: median(times), cpuMs: median(cpus) };
}

/**
 * The sandbox image's program as sandbox/Dockerfile builds /app/main.mjs (keep the two the same): one
 * file, no chunks, so esbuild wraps the lazily imported agent's modules for lazy initialization.
 */
export function sandboxImageOptions(outfile: string): BuildOptions {
  return {
    entryPoints: [join(REPO_ROOT, 'sandbox/main.ts')],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    mainFields: ['module', 'main'],
    outfile,
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'silent',
  };
}
