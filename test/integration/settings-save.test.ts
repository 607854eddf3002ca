import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import { settingsInputSchema, type SettingsInput } from '#shared/settings/model.ts';
import { SettingsService } from '#shared/settings/service.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import type { SettingsStore } from '#shared/settings/settings-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

// How a save reaches the store and the sealer (calls counted on the real adapters), what it leaves in
// the table, and that the write without a read gives what the read-merge-write path gives.

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

const parse = (body: unknown): SettingsInput => settingsInputSchema.parse(body);
const rawItem = async (userId: string) =>
  (
    await documentClient().send(
      new GetCommand({ TableName: tableName('settings'), Key: { userId }, ConsistentRead: true }),
    )
  ).Item!;

/** A service on the real store and a real sealer, counting what each is asked. */
function counted(options: { readFirst?: boolean; noCleanup?: boolean } = {}) {
  const calls: string[] = [];
  const store = new DynamoSettingsStore();
  const countingStore: SettingsStore = {
    get: (u) => {
      calls.push('get');
      return store.get(u);
    },
    put: (r, v) => {
      calls.push('put');
      return store.put(r, v);
    },
    // readFirst: every save takes the read-merge-write path, the reference the direct write must match.
    // noCleanup: the removal of values a replaced config left (a patch that sets nothing) never lands.
    update: (u, p, t) => {
      calls.push('update');
      return options.readFirst || (options.noCleanup && p.set.length === 0)
        ? Promise.resolve(undefined)
        : store.update(u, p, t);
    },
  };
  const real = LocalSealer.withKey(sealKey);
  const sealer: Sealer = {
    seal: (text, owner) => {
      calls.push('seal');
      return real.seal(text, owner);
    },
    open: (text, owner) => {
      calls.push('open');
      return real.open(text, owner);
    },
  };
  return { calls, service: new SettingsService(countingStore, sealer), sealer: real };
}
const sealKey = randomBytes(32);

const full = {
  language: 'en',
  llm_model: 'openai/gpt-4o',
  llm_api_key: 'sk-plan-1',
  llm_base_url: 'https://llm.example.test/v1',
  max_iterations: 30,
  search_api_key: 'tvly-plan-2',
  secrets_store: {
    provider_tokens: { github: { token: 'ghp_plan_3', host: 'github.com', user_id: 'u-1' } },
    custom_secrets: { DEPLOY: { secret: 'custom-plan-4', description: 'deploys' }, OTHER: 'custom-plan-5' },
  },
  mcp_config: {
    sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: 'sse-plan-6' }],
    stdio_servers: [{ name: 'fetch', command: 'uvx', args: ['f'], env: { TOKEN: 'env-plan-7', MODE: 'fast-plan-8' } }],
    shttp_servers: [{ url: 'https://shttp.example.test/mcp' }],
  },
};
const secretValues = [
  'sk-plan-1',
  'tvly-plan-2',
  'ghp_plan_3',
  'custom-plan-4',
  'custom-plan-5',
  'sse-plan-6',
  'env-plan-7',
  'fast-plan-8',
];

/** What the console posts back after a GET: every field, secrets not typed, MCP values and custom secrets as null (keep). */
const consoleSave = {
  language: 'de',
  llm_model: 'openai/gpt-4o',
  llm_base_url: 'https://llm.example.test/v1',
  max_iterations: 31,
  confirmation_mode: false,
  mcp_config: {
    sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: null }],
    stdio_servers: [{ name: 'fetch', command: 'uvx', args: ['g'], env: { TOKEN: null, MODE: null } }],
    shttp_servers: [{ url: 'https://shttp.example.test/mcp', api_key: null }],
  },
  secrets_store: {
    custom_secrets: { DEPLOY: { secret: null, description: 'deploys' }, OTHER: { secret: null, description: null } },
    provider_tokens: {},
  },
};

describe('settings save', () => {
  it('after the first, a save is one store call: no read, nothing opened, only the given secrets sealed', async () => {
    const { calls, service } = counted();
    await service.save('plan-calls', parse(full));
    // First save: the write without a read finds nothing, so it reads and puts.
    expect(calls.filter((c) => c !== 'seal')).toEqual(['update', 'get', 'put']);
    expect(calls.filter((c) => c === 'seal')).toHaveLength(8);

    calls.length = 0;
    await service.save('plan-calls', parse(consoleSave));
    expect(calls).toEqual(['update']);

    calls.length = 0;
    await service.save('plan-calls', parse({ llm_api_key: 'sk-plan-new', max_iterations: 5 }));
    expect(calls).toEqual(['seal', 'update']);

    const resolved = await service.resolve('plan-calls');
    expect(resolved?.llm_api_key).toBe('sk-plan-new');
    expect(resolved?.language).toBe('de');
    expect(resolved?.max_iterations).toBe(5);
    expect(resolved?.mcp_config.stdio_servers).toEqual([
      { name: 'fetch', command: 'uvx', args: ['g'], env: { TOKEN: 'env-plan-7', MODE: 'fast-plan-8' } },
    ]);
    expect(resolved?.secrets_store.custom_secrets).toEqual({
      DEPLOY: { secret: 'custom-plan-4', description: 'deploys' },
      OTHER: { secret: 'custom-plan-5', description: null },
    });
    expect(resolved?.secrets_store.provider_tokens.github).toEqual({
      token: 'ghp_plan_3',
      host: 'github.com',
      user_id: 'u-1',
    });
  });

  it('stores every secret sealed, one by one, bound to the user', async () => {
    const { service, sealer } = counted();
    await service.save('plan-sealed', parse(full));
    const item = await rawItem('plan-sealed');
    const text = JSON.stringify(item);
    for (const secret of secretValues) expect(text).not.toContain(secret);
    expect(Object.keys(item.secrets).sort()).toEqual([
      'custom:DEPLOY',
      'custom:OTHER',
      'llm_api_key',
      'mcp:sse:https://sse.example.test/mcp',
      'mcp:stdio:fetch:MODE',
      'mcp:stdio:fetch:TOKEN',
      'provider:github',
      'search_api_key',
    ]);
    expect(item.sealed).toBeUndefined();
    await expect(sealer.open(item.secrets.llm_api_key, 'plan-sealed')).resolves.toBe('sk-plan-1');
    await expect(sealer.open(item.secrets.llm_api_key, 'someone-else')).rejects.toThrow();
  });

  // Each step is applied by the write without a read on one user and by read-merge-write on another:
  // the masked view and the opened secrets must be the same after every step.
  const steps: unknown[] = [
    {},
    full,
    consoleSave,
    { llm_api_key: null, llm_model: null, language: null, search_api_key: '' },
    {
      secrets_store: {
        custom_secrets: {
          DEPLOY: '',
          NEW: { secret: null, description: 'nothing to keep' },
          OTHER: { description: 'renamed' },
        },
      },
    },
    {
      secrets_store: {
        provider_tokens: {
          github: { token: null, host: 'ghe.example.test' },
          gitlab: { token: null, host: 'gitlab.com' },
        },
      },
    },
    { secrets_store: { provider_tokens: { github: { user_id: null } }, custom_secrets: { FRESH: 'fresh-secret' } } },
    // A variable dropped, one kept, one new with nothing stored (dropped), and a server removed.
    {
      mcp_config: {
        stdio_servers: [{ name: 'fetch', command: 'uvx', env: { TOKEN: null, NEWVAR: null, EXTRA: 'x' } }],
        sse_servers: [],
        shttp_servers: [{ url: 'https://shttp.example.test/mcp', api_key: null }],
      },
    },
    // The removed server comes back with a null key: nothing to keep, its old key stays gone.
    {
      mcp_config: {
        sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: null }],
        stdio_servers: [{ name: 'fetch', command: 'uvx', env: { MODE: null, TOKEN: null } }],
      },
    },
    {
      secrets_store: { provider_tokens: { github: null }, custom_secrets: { OTHER: null } },
      sandbox_api_key: 'sbx-1',
      max_budget_per_task: 3,
    },
  ];
  it('writes without reading exactly what read-merge-write gives, step by step', async () => {
    const direct = counted();
    const reading = counted({ readFirst: true });
    const saveCalls: string[] = [];
    const readAt: number[] = [];
    for (const [i, step] of steps.entries()) {
      direct.calls.length = 0;
      await direct.service.save('plan-direct', parse(step));
      saveCalls.push(...direct.calls);
      if (direct.calls.includes('get')) readAt.push(i);
      await reading.service.save('plan-reading', parse(step));
      expect(await direct.service.get('plan-direct'), `masked after step ${i}`).toEqual(
        await reading.service.get('plan-reading'),
      );
      expect(await direct.service.resolve('plan-direct'), `resolved after step ${i}`).toEqual(
        await reading.service.resolve('plan-reading'),
      );
    }
    const resolved = (await direct.service.resolve('plan-direct'))!;
    expect(resolved.mcp_config.sse_servers).toEqual([{ url: 'https://sse.example.test/mcp', api_key: null }]);
    expect(resolved.mcp_config.stdio_servers[0]!.env).toEqual({ TOKEN: 'env-plan-7' });
    expect(Object.keys(resolved.secrets_store.custom_secrets).sort()).toEqual(['FRESH']);
    // Read only where the write could not apply: the first save, and a null with nothing stored to keep.
    expect(readAt).toEqual([0, 4, 5, 7, 8]);
    // Saves opened nothing; values of servers and variables no longer listed are gone from the item.
    expect(saveCalls).not.toContain('open');
    const item = await rawItem('plan-direct');
    expect(Object.keys(item.secrets).filter((k) => k.startsWith('mcp:'))).toEqual(['mcp:stdio:fetch:TOKEN']);
  });

  it('reads a record of the earlier format (one sealed document) and rewrites it per field on the next save', async () => {
    const { service, sealer, calls } = counted();
    const doc = {
      llm_api_key: 'sk-old-1',
      provider_tokens: { github: { token: 'ghp_old_2', host: 'github.com', user_id: null } },
      custom_secrets: { OLD: { secret: 'old-3', description: 'd' } },
      mcp_config: {
        sse_servers: [{ url: 'https://old.example.test', api_key: 'old-4' }],
        stdio_servers: [{ name: 's', command: 'c', args: [], env: { K: 'old-5' } }],
        shttp_servers: [],
      },
    };
    await documentClient().send(
      new PutCommand({
        TableName: tableName('settings'),
        Item: {
          userId: 'plan-old',
          version: 3,
          updatedAt: '2026-01-01T00:00:00.000Z',
          values: { language: 'fr', enable_default_condenser: true },
          sealed: await sealer.seal(JSON.stringify(doc), 'plan-old'),
          secretsSummary: {
            llm_api_key_set: true,
            search_api_key_set: false,
            sandbox_api_key_set: false,
            provider_tokens_set: { github: 'github.com' },
            custom_secrets: { OLD: { description: 'd' } },
            mcp_config: {
              sse_servers: [{ url: 'https://old.example.test', api_key: null }],
              stdio_servers: [{ name: 's', command: 'c', args: [], env: { K: null } }],
              shttp_servers: [],
            },
          },
        },
      }),
    );
    const before = await service.get('plan-old');
    expect(before.language).toBe('fr');
    expect(await service.resolve('plan-old')).toMatchObject({
      llm_api_key: 'sk-old-1',
      secrets_store: { provider_tokens: doc.provider_tokens, custom_secrets: doc.custom_secrets },
      mcp_config: doc.mcp_config,
    });

    calls.length = 0;
    await service.save(
      'plan-old',
      parse({
        language: 'it',
        mcp_config: { ...doc.mcp_config, stdio_servers: [{ name: 's', command: 'c', env: { K: null } }] },
      }),
    );
    expect(calls.filter((c) => c !== 'seal')).toEqual(['update', 'get', 'open', 'put']);
    const item = await rawItem('plan-old');
    expect(item.sealed).toBeUndefined();
    expect(item.version).toBe(4);
    expect(JSON.stringify(item)).not.toMatch(/old-\d|sk-old|ghp_old/);
    expect(await service.resolve('plan-old')).toMatchObject({
      language: 'it',
      llm_api_key: 'sk-old-1',
      secrets_store: { provider_tokens: doc.provider_tokens, custom_secrets: doc.custom_secrets },
      mcp_config: doc.mcp_config,
    });
    expect(await service.get('plan-old')).toEqual({ ...before, language: 'it' });
  });

  it('writes a save too large for one update expression whole, after reading', async () => {
    const { service, calls } = counted();
    await service.save('plan-large', parse({ language: 'en' }));
    const names = Array.from({ length: 120 }, (_, i) => `SECRET_${i}`);
    calls.length = 0;
    await service.save(
      'plan-large',
      parse({ secrets_store: { custom_secrets: Object.fromEntries(names.map((n) => [n, `value-${n}`])) } }),
    );
    expect(calls.filter((c) => c !== 'seal')).toEqual(['update', 'get', 'put']);
    // The console's save of them all, each kept with a description.
    await service.save(
      'plan-large',
      parse({
        secrets_store: {
          custom_secrets: Object.fromEntries(names.map((n) => [n, { secret: null, description: `d-${n}` }])),
        },
      }),
    );
    const custom = (await service.resolve('plan-large'))!.secrets_store.custom_secrets;
    expect(Object.keys(custom)).toHaveLength(120);
    expect(custom.SECRET_119).toEqual({ secret: 'value-SECRET_119', description: 'd-SECRET_119' });
  });

  it('never keeps a value a replaced config left behind, whether or not it was removed yet', async () => {
    const { service } = counted({ noCleanup: true });
    await service.save('plan-stale', parse(full));
    await service.save(
      'plan-stale',
      parse({ mcp_config: { stdio_servers: [{ name: 'fetch', command: 'uvx', env: { TOKEN: null } }] } }),
    );
    // Left in the item (its removal did not land), but listed by nothing.
    expect(Object.keys((await rawItem('plan-stale')).secrets)).toEqual(
      expect.arrayContaining(['mcp:sse:https://sse.example.test/mcp', 'mcp:stdio:fetch:MODE']),
    );
    expect((await service.resolve('plan-stale'))!.mcp_config.stdio_servers[0]!.env).toEqual({ TOKEN: 'env-plan-7' });
    // The same server, then the same variable, listed again with null: nothing to keep.
    await service.save(
      'plan-stale',
      parse({
        mcp_config: {
          sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: null }],
          stdio_servers: [{ name: 'fetch', command: 'uvx', env: { TOKEN: null } }],
        },
      }),
    );
    expect((await service.resolve('plan-stale'))!.mcp_config.sse_servers).toEqual([
      { url: 'https://sse.example.test/mcp', api_key: null },
    ]);
    await service.save(
      'plan-stale',
      parse({
        mcp_config: {
          sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: null }],
          stdio_servers: [{ name: 'fetch', command: 'uvx', env: { TOKEN: null, MODE: null } }],
        },
      }),
    );
    const resolved = (await service.resolve('plan-stale'))!;
    expect(resolved.mcp_config.sse_servers).toEqual([{ url: 'https://sse.example.test/mcp', api_key: null }]);
    expect(resolved.mcp_config.stdio_servers[0]!.env).toEqual({ TOKEN: 'env-plan-7' });
    // That save had to read, and it dropped what was left.
    expect(Object.keys((await rawItem('plan-stale')).secrets).filter((k) => k.startsWith('mcp:'))).toEqual([
      'mcp:stdio:fetch:TOKEN',
    ]);
  });

  it('keeps both changes when a config replacement and a keep-null save race', async () => {
    const { service } = counted();
    await service.save('plan-race', parse(full));
    await Promise.all([
      service.save(
        'plan-race',
        parse({ mcp_config: { stdio_servers: [{ name: 'fetch', command: 'uvx', env: { TOKEN: null } }] } }),
      ),
      service.save(
        'plan-race',
        parse({ language: 'pt', secrets_store: { custom_secrets: { DEPLOY: { secret: null, description: 'new' } } } }),
      ),
      service.save('plan-race', parse({ git_user_name: 'Racer', llm_api_key: 'sk-race' })),
    ]);
    const resolved = (await service.resolve('plan-race'))!;
    expect(resolved.mcp_config.stdio_servers).toEqual([
      { name: 'fetch', command: 'uvx', args: [], env: { TOKEN: 'env-plan-7' } },
    ]);
    expect(resolved.mcp_config.sse_servers).toEqual([]);
    expect(resolved.language).toBe('pt');
    expect(resolved.git_user_name).toBe('Racer');
    expect(resolved.llm_api_key).toBe('sk-race');
    expect(resolved.secrets_store.custom_secrets.DEPLOY).toEqual({ secret: 'custom-plan-4', description: 'new' });
  });

  it('stores nothing under a custom secret named __proto__, and pollutes no prototype', async () => {
    const { service } = counted();
    await service.save(
      'plan-proto',
      parse(
        JSON.parse(
          '{"secrets_store": {"custom_secrets": {"__proto__": {"secret": "proto-secret", "description": "x"}}}}',
        ),
      ),
    );
    expect((await service.get('plan-proto')).secrets_store.custom_secrets).toEqual({});
    expect(JSON.stringify(await rawItem('plan-proto'))).not.toContain('proto-secret');
    expect(({} as Record<string, unknown>).description).toBeUndefined();
  });
});

describe('settings secrets longer than one seal takes', () => {
  it('refuses a secret over 4096 bytes with a 422 naming it, echoing none of it, and stores nothing of that save', async () => {
    const key = await stack.newUser('long-secret');
    expect((await stack.call('POST', '/api/settings', { key, body: { language: 'en' } })).status).toBe(200);
    const long = 'Z'.repeat(4097);
    const cases: [unknown, (string | number)[]][] = [
      [
        { language: 'de', secrets_store: { custom_secrets: { BIG: long } } },
        ['body', 'secrets_store', 'custom_secrets', 'BIG'],
      ],
      [
        { language: 'de', secrets_store: { custom_secrets: { BIG: { secret: long } } } },
        ['body', 'secrets_store', 'custom_secrets', 'BIG', 'secret'],
      ],
      [
        {
          language: 'de',
          mcp_config: {
            stdio_servers: [
              { name: 'a', command: 'b' },
              { name: 'c', command: 'd', env: { K: long } },
            ],
          },
        },
        ['body', 'mcp_config', 'stdio_servers', 1, 'env', 'K'],
      ],
      // 2,048 characters of three bytes each: within the schema's bound, over the seal's.
      [{ language: 'de', llm_api_key: '€'.repeat(2048) }, ['body', 'llm_api_key']],
    ];
    for (const [body, loc] of cases) {
      const res = await stack.call('POST', '/api/settings', { key, body });
      expect(res.status, JSON.stringify(loc)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(loc);
      expect(res.text).not.toContain('ZZZZ');
    }
    expect((await stack.call('GET', '/api/settings', { key })).body.language).toBe('en');
    // At the bound it is stored.
    expect(
      (
        await stack.call('POST', '/api/settings', {
          key,
          body: { secrets_store: { custom_secrets: { BIG: 'Z'.repeat(4096) } } },
        })
      ).status,
    ).toBe(200);
  });
});

describe('settings URLs with credentials', () => {
  it('refuses llm_base_url and MCP server URLs with user:password@, naming the field and echoing no credential', async () => {
    const key = await stack.newUser('url-creds');
    const cases: [unknown, (string | number)[]][] = [
      [{ llm_base_url: 'https://user:hunter2-pass@llm.example.test/v1' }, ['body', 'llm_base_url']],
      [{ llm_base_url: 'https://only-user-token@llm.example.test/v1' }, ['body', 'llm_base_url']],
      [
        {
          mcp_config: {
            sse_servers: [{ url: 'https://a.example.test' }, { url: 'http://x:hunter2-pass@b.example.test/mcp' }],
          },
        },
        ['body', 'mcp_config', 'sse_servers', 1, 'url'],
      ],
      [
        { mcp_config: { shttp_servers: [{ url: 'https://:hunter2-pass@c.example.test' }] } },
        ['body', 'mcp_config', 'shttp_servers', 0, 'url'],
      ],
    ];
    for (const [body, loc] of cases) {
      const res = await stack.call('POST', '/api/settings', { key, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(loc);
      expect(res.text).not.toContain('hunter2');
      expect(res.text).not.toContain('only-user-token');
    }
    expect((await stack.call('GET', '/api/settings', { key })).status).toBe(404);
  });

  it('stores ordinary URLs, an @ in a path or query included, and shows them', async () => {
    const key = await stack.newUser('url-plain');
    const body = {
      llm_base_url: 'https://llm.example.test/v1/@team?x=a@b',
      mcp_config: { sse_servers: [{ url: 'https://mcp.example.test/@me' }] },
    };
    expect((await stack.call('POST', '/api/settings', { key, body })).status).toBe(200);
    const got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got.llm_base_url).toBe(body.llm_base_url);
    expect(got.mcp_config.sse_servers).toEqual([{ url: 'https://mcp.example.test/@me', api_key: null }]);
  });
});
