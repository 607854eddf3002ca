import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, ROUTES_PER_STACK, routeStackNames } from '#infra/stack.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';
import { flattenNested, type Template } from '#test/tier/template.ts';

/**
 * CloudFormation's quotas per template (docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html):
 * 500 resources, 200 outputs, 200 parameters, 1 MB of template body in S3. Cross-stack references are
 * parameters of the nested stack and outputs of the stack they come from, so they count here too.
 */
const QUOTAS = { resources: 500, outputs: 200, parameters: 200, bytes: 1_000_000 } as const;
/** The SaaS issues add some 55-80 route functions: the deployment must hold them all. */
const EXTRA_ROUTES = 80;
/** This test fails at 80% of a quota: room left to split a stack further before a deployment is refused. */
const FAIL_AT = 0.8;

const cdkContext = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context as Record<
  string,
  unknown
>;
const table = routes as readonly RouteDef[];
/** The heaviest declaration today (most tables and capabilities: the largest role policy and environment). */
const heaviest = [...table].sort(
  (a, b) =>
    Object.keys(b.tables).length +
    (b.capabilities?.length ?? 0) -
    (Object.keys(a.tables).length + (a.capabilities?.length ?? 0)),
)[0]!;
/** 80 more routes shaped like the heaviest, spread over four new tags and one existing one. */
const extraRoutes: RouteDef[] = Array.from({ length: EXTRA_ROUTES }, (_, i) => ({
  ...heaviest,
  id: `extraRoute${i}`,
  path: `/api/v1/extra/${i}`,
  tag: i < 20 ? heaviest.tag : `extra-${i % 4}`,
  summary: `Generated route ${i} for the quota test`,
}));

interface Usage {
  name: string;
  resources: number;
  outputs: number;
  parameters: number;
  bytes: number;
}

let dir: string;
let usages: Usage[];
let flat: Template;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'acs-quotas-'));
  // No bundling: the assets' content does not change a template (they are named by hash either way).
  // Asset metadata as the CLI writes it (it names each nested template's file, and counts in a template's size).
  const app = new App({
    context: { ...cdkContext, 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-asset-metadata': true },
    outdir: dir,
  });
  const stack = buildApp(app, extraRoutes);
  const assembly = app.synth();
  const file = (name: string) => join(dir, name);
  const read = (name: string): Template => JSON.parse(readFileSync(file(name), 'utf8'));
  const parentFile = assembly.getStackByName(stack.stackName).templateFile;
  const usage = (name: string, text: string): Usage => {
    const t = JSON.parse(text) as Template;
    return {
      name,
      resources: Object.keys(t.Resources).length,
      outputs: Object.keys(t.Outputs ?? {}).length,
      parameters: Object.keys(t.Parameters ?? {}).length,
      bytes: Buffer.byteLength(text),
    };
  };
  const parent = read(parentFile);
  usages = [usage(parentFile, readFileSync(file(parentFile), 'utf8'))];
  for (const r of Object.values(parent.Resources)) {
    if (r.Type !== 'AWS::CloudFormation::Stack') continue;
    const name = r.Metadata!['aws:asset:path'] as string;
    usages.push(usage(name, readFileSync(file(name), 'utf8')));
  }
  flat = flattenNested(parent, read);
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe(`CloudFormation quotas with ${EXTRA_ROUTES} more route functions`, () => {
  it(`keeps the stack and every nested stack under ${FAIL_AT * 100}% of each quota`, () => {
    const worst = Object.fromEntries(
      (Object.keys(QUOTAS) as (keyof typeof QUOTAS)[]).map((q) => [
        q,
        Math.max(...usages.map((u) => u[q])) / QUOTAS[q],
      ]),
    );
    console.log(
      `quotas: ${usages.length} templates; largest share of each quota: ${Object.entries(worst)
        .map(([q, share]) => `${q} ${(share * 100).toFixed(0)}%`)
        .join(', ')}`,
    );
    for (const u of usages)
      for (const q of Object.keys(QUOTAS) as (keyof typeof QUOTAS)[])
        expect(u[q] / QUOTAS[q], `${u.name}: ${q} ${u[q]} of ${QUOTAS[q]}`).toBeLessThan(FAIL_AT);
  });

  it('holds every function: one per route, the extra ones included', () => {
    const functions = Object.values(flat.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThanOrEqual(table.length + EXTRA_ROUTES);
  });

  it(`puts at most ${ROUTES_PER_STACK} routes in a nested stack, by tag, in table order`, () => {
    const names = routeStackNames([...table, ...extraRoutes]);
    const counts = new Map<string, number>();
    for (const name of names.values()) counts.set(name, (counts.get(name) ?? 0) + 1);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(ROUTES_PER_STACK);
    // Adding a route leaves every other route where it was.
    const before = routeStackNames(table);
    for (const [id, name] of before) expect(names.get(id), id).toBe(name);
  });

  it('is live: a template over 80% of a quota fails the check', () => {
    const over = { resources: 401, outputs: 0, parameters: 0, bytes: 0 };
    expect(over.resources / QUOTAS.resources).not.toBeLessThan(FAIL_AT);
  });
});
