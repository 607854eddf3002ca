import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from '#test/helpers/server-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-server-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const post = (url: string, key: string, body: unknown, raw?: string) =>
  fetch(`${url}/api/settings`, {
    method: 'POST',
    headers: { 'x-session-api-key': key, 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });

describe('npm start as a process', () => {
  it('keeps data across Ctrl-C and a restart, reuses the dev key, and never logs a secret', async () => {
    const secrets = [
      'sk-log-secret-aaa',
      'ghp_log_secret_bbb',
      'custom-log-secret-ccc',
      'mcp-log-secret-ddd',
      'env-log-secret-eee',
    ];
    const first = await startServerProcess(dataDir);
    expect(first.key).toMatch(/^acs_/);
    const saved = await post(first.url, first.key, {
      llm_api_key: secrets[0],
      llm_model: 'openai/gpt-4o',
      secrets_store: { provider_tokens: { github: { token: secrets[1] } }, custom_secrets: { X: secrets[2] } },
      mcp_config: {
        sse_servers: [{ url: 'https://m.example.test', api_key: secrets[3] }],
        stdio_servers: [{ name: 's', command: 'c', env: { T: secrets[4] } }],
      },
    });
    expect(saved.status).toBe(200);
    // Secrets in bad requests must not reach the logs either.
    expect((await post(first.url, first.key, { llm_api_key: 42, search_api_key: secrets[0] })).status).toBe(422);
    expect((await post(first.url, first.key, null, `{"llm_api_key":"${secrets[0]}"`)).status).toBe(400);
    expect(
      (await fetch(`${first.url}/api/settings`, { headers: { authorization: `Bearer ${secrets[0]}` } })).status,
    ).toBe(401);
    expect(await first.interrupt()).toBe(0);

    const second = await startServerProcess(dataDir);
    expect(second.key).toBe(first.key);
    const got = await fetch(`${second.url}/api/settings`, { headers: { 'x-session-api-key': second.key } });
    expect(got.status).toBe(200);
    const body = (await got.json()) as Record<string, unknown>;
    expect(body.llm_model).toBe('openai/gpt-4o');
    expect(body.llm_api_key_set).toBe(true);
    expect(await second.interrupt()).toBe(0);

    const logs = first.output() + second.output();
    expect(logs).toContain('"message":"request"');
    for (const secret of secrets) expect(logs).not.toContain(secret);
  }, 90_000);

  it('fails fast with the key named when configuration is bad', async () => {
    const { spawnSync } = await import('node:child_process');
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'infra/local/server.ts'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: { ...process.env, PORT: 'eighty', DATA_DIR: dataDir },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('PORT');
  }, 40_000);
});
