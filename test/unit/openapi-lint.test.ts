import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openapi } from '#shared/http/openapi-operation.ts';
import { handle, type ApiEvent } from '#shared/http/wrapper.ts';
import type { Services } from '#shared/services.ts';

/**
 * The document as it is served (GET /openapi.json through the wrapper), linted by Redocly CLI with
 * its recommended rules (test/unit/redocly.yaml): 0 errors and 0 warnings. Offline: telemetry off by
 * the environment and the config (with it on, the CLI resolves a telemetry host; with both off it
 * opened no socket under strace when @redocly/cli 2.77.0 was pinned: the last release for Node 20).
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function served(host: string, env: Record<string, string> = {}) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const event = {
      headers: { host, 'x-forwarded-proto': 'http' },
      rawQueryString: '',
      requestContext: { requestId: 'r', authorizer: { lambda: { userId: '' } } },
    } as unknown as ApiEvent;
    const res = await handle(openapi, event, {} as Services);
    expect(res.statusCode).toBe(200);
    return JSON.parse(res.body!) as { servers: { url: string }[] };
  } finally {
    process.env = saved;
  }
}

async function lint(doc: unknown) {
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  const run = await promisify(execFile)(
    process.execPath,
    [
      join(root, 'node_modules/@redocly/cli/bin/cli.js'),
      'lint',
      '--config',
      join(root, 'test/unit/redocly.yaml'),
      '--format=json',
      file,
    ],
    {
      env: {
        PATH: process.env.PATH,
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        NODE_ENV: 'test',
      },
      maxBuffer: 64 * 1024 * 1024,
    },
  ).catch((err: { stdout: string; stderr: string }) => err);
  const out = JSON.parse(run.stdout) as {
    totals: { errors: number; warnings: number };
    problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
  };
  return {
    totals: out.totals,
    problems: out.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`),
  };
}

describe('the OpenAPI document', () => {
  it('lints clean with Redocly CLI recommended rules, as served locally', { timeout: 60_000 }, async () => {
    const doc = await served('127.0.0.1:4123');
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:4123', description: 'This API' }]);
    const { totals, problems } = await lint(doc);
    expect(problems).toEqual([]);
    expect(totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it("names the stack's public URL on AWS (PUBLIC_BASE_URL, the PublicUrl output), whatever the Host", async () => {
    const doc = await served('abc.execute-api.eu-west-1.amazonaws.com', {
      PUBLIC_BASE_URL: 'https://d111111abcdef8.cloudfront.net/',
    });
    expect(doc.servers.map((s) => s.url)).toEqual(['https://d111111abcdef8.cloudfront.net']);
  });

  it('the lint can fail: an operation without a 4xx answer and an empty servers list are reported', async () => {
    const doc = (await served('127.0.0.1:4123')) as { servers: unknown[]; paths: Record<string, any> };
    doc.servers = [];
    delete doc.paths['/health'].get.responses['429'];
    const { totals, problems } = await lint(doc);
    expect(totals.errors + totals.warnings).toBe(2);
    expect(problems.map((p) => p.split(' ')[0]).sort()).toEqual(['no-empty-servers', 'operation-4xx-response']);
  });
});
