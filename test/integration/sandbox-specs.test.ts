import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envSpecRegistry } from '#shared/sandbox-specs/env-spec-registry.ts';
import { fileSpecRegistry } from '#shared/sandbox-specs/file-spec-registry.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { sandboxSpecsEnv } from '#test/helpers/fake-aws.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ specsFile: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json') });
});
afterAll(() => stack?.stop());

describe('sandbox specs over HTTP', () => {
  it('lists the configured specs, the default first, in pages', async () => {
    const all = await stack.call('GET', '/api/v1/sandbox-specs/search');
    expect(all.status).toBe(200);
    expect(all.body.items.map((s: any) => s.id)).toEqual(['local-default', 'never-checks-in', 'no-such-binary']);
    expect(all.body.items[0]).toEqual({
      id: 'local-default',
      command: ['node', '{sandbox_program}'],
      created_at: '2025-11-01T00:00:00Z',
      initial_env: { SANDBOX_FLAVOUR: 'test' },
      working_dir: '{data_dir}/sandboxes/{sandbox_id}/workspace',
      cpu: null,
      memory: null,
    });
    const first = await stack.call('GET', '/api/v1/sandbox-specs/search?limit=2');
    expect(first.body.items).toHaveLength(2);
    const second = await stack.call('GET', `/api/v1/sandbox-specs/search?limit=2&page_id=${first.body.next_page_id}`);
    expect(second.body).toEqual({ items: [expect.objectContaining({ id: 'no-such-binary' })], next_page_id: null });
    expect((await stack.call('GET', '/api/v1/sandbox-specs/search?page_id=abc')).status).toBe(400);
    expect((await stack.call('GET', '/api/v1/sandbox-specs/search', { key: null })).status).toBe(401);
  });

  it('gets specs by id in request order, null for unknown ids', async () => {
    const res = await stack.call('GET', '/api/v1/sandbox-specs?id=no-such-binary&id=nope&id=local-default');
    expect(res.body.map((s: any) => s?.id ?? null)).toEqual(['no-such-binary', null, 'local-default']);
  });

  it('starts a sandbox from a named spec', async () => {
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=no-such-binary');
    expect(res.body.sandbox_spec_id).toBe('no-such-binary');
  });
});

describe('spec registries', () => {
  it('reads the repository config: the default spec runs sandbox/main.ts', () => {
    const registry = fileSpecRegistry(join(PROJECT_ROOT, 'config/sandbox-specs.json'));
    expect(registry.defaultSpec()).toMatchObject({ id: 'local-default', command: ['node', '{sandbox_program}'] });
  });

  it('fails fast, naming the place, on a bad file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-specs-'));
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify([{ id: 'x', command: [], created_at: 'yesterday', working_dir: '/w' }]),
    );
    expect(() => fileSpecRegistry(join(dir, 'bad.json'))).toThrow(/bad\.json at \[0\.command\]/);
    expect(() => fileSpecRegistry(join(dir, 'missing.json'))).toThrow(/cannot read sandbox specs/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the deployment registry from SANDBOX_SPECS, with CPU, memory and Spot', () => {
    const spec = envSpecRegistry(sandboxSpecsEnv(true)).defaultSpec();
    expect(spec).toMatchObject({
      id: 'default',
      cpu: 1024,
      memory: 2048,
      fargate: { spot: true, family: 'acs-sandbox-default' },
    });
    expect(() => envSpecRegistry(undefined)).toThrow(/SANDBOX_SPECS/);
    expect(() => envSpecRegistry('[{"id":"x"}]')).toThrow(/SANDBOX_SPECS at \[0\./);
    expect(() => envSpecRegistry('[]')).toThrow(/no sandbox spec/);
  });
});
