import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { credentialTimes, fetchWithKey, renewalMargin, renewingKey } from '#sandbox/agent/llm-credential.ts';
import { llmCharge, llmReservation } from '#shared/llm/cost.ts';
import { LlmCredentials } from '#shared/llm/credential.ts';
import { arnKeys } from '#shared/llm/keys.ts';
import {
  envPlatformModels,
  filePlatformModels,
  modelsHash,
  parsePlatformModels,
  type PlatformModel,
} from '#shared/llm/platform-models.ts';

const model = (over: Partial<PlatformModel> = {}) => ({
  model: 'platform/claude-sonnet',
  provider: 'openai',
  upstream_model: 'up-1',
  base_url: 'http://127.0.0.1:9/v1',
  api_key_env: 'PLATFORM_KEY',
  usd_per_mtok: { input: 3, output: 15, cached_input: 0.3, cache_write_input: 3.75 },
  markup: 0.2,
  max_output_tokens: 8192,
  ...over,
});

describe('platform models configuration', () => {
  it('config/platform-llms.json is valid and names each model once', () => {
    const models = filePlatformModels(new URL('../../config/platform-llms.json', import.meta.url).pathname);
    expect(models.list.length).toBeGreaterThan(0);
    expect(models.get('platform/claude-sonnet')?.provider).toBe('anthropic');
  });

  it.each([
    [[model({ base_url: 'file:///etc/passwd' })], '0.base_url'],
    [[model({ api_key_env: 'lower-case' })], '0.api_key_env'],
    [[model({ max_output_tokens: 0 })], '0.max_output_tokens'],
    [[{ ...model(), price: 1 }], '0'],
    [[model({ usd_per_mtok: { input: -1, output: 1 } })], '0.usd_per_mtok.input'],
    [[model(), model()], '(top)'],
    [[model({ api_key_env: undefined })], '(top)'],
  ])('refuses a bad file, naming where: %j', (raw, where) => {
    expect(() => parsePlatformModels(raw, 'PLATFORM_LLMS_FILE x.json')).toThrow(
      `Configuration error: PLATFORM_LLMS_FILE x.json at ${where}`,
    );
  });

  it('reads a file and the AWS env, and names an unreadable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pllm-'));
    writeFileSync(join(dir, 'm.json'), JSON.stringify([model()]));
    expect(filePlatformModels(join(dir, 'm.json')).get('platform/claude-sonnet')?.upstream_model).toBe('up-1');
    expect(() => filePlatformModels(join(dir, 'none.json'))).toThrow('PLATFORM_LLMS_FILE: cannot read');
    expect(envPlatformModels(undefined).list).toEqual([]);
    expect(() => envPlatformModels('{')).toThrow('PLATFORM_LLMS is not JSON');
  });

  it('hashes an allowed set independently of its order', () => {
    expect(modelsHash(['a', 'b'])).toBe(modelsHash(['b', 'a']));
    expect(modelsHash(['a'])).not.toBe(modelsHash(['a', 'b']));
  });
});

describe('cost in integer micro-USD', () => {
  const m = parsePlatformModels([model()], 't').list[0]!;
  it('is tokens x price per million x (1 + markup), rounded half-even once', () => {
    // 1000 x 3 + 500 x 15 = 10500 micro-USD, x 1.2 = 12600
    expect(llmCharge({ input: 1000, output: 500, cachedInput: 0, cacheWriteInput: 0 }, m)).toBe(12600);
    // 7 cached at 0.3 = 2.1, x 1.2 = 2.52 -> 3; 1 cache write at 3.75 x 1.2 = 4.5 -> 4 (half to even)
    expect(llmCharge({ input: 0, output: 0, cachedInput: 7, cacheWriteInput: 0 }, m)).toBe(3);
    expect(llmCharge({ input: 0, output: 0, cachedInput: 0, cacheWriteInput: 1 }, m)).toBe(4);
    expect(llmCharge({ input: 0, output: 0, cachedInput: 0, cacheWriteInput: 0 }, m)).toBe(0);
  });
  it('reserves the most a call can cost', () => {
    expect(llmReservation(100, 8192, m)).toBe(
      llmCharge(
        { input: 100, output: 8192, cachedInput: 0, cacheWriteInput: 0 },
        { ...m, usd_per_mtok: { input: 3.75, output: 15 } },
      ),
    );
  });
});

describe('gateway credentials (acsl.)', () => {
  const secret = async () => Buffer.alloc(32, 7);
  const claims = { u: 'alice', o: 'org1', c: 'c'.repeat(32), v: 1, s: 'sbx', g: 1, m: 'h' };
  it('verifies what it minted, and nothing forged, altered, foreign-keyed or expired', async () => {
    let now = 1_000_000_000_000;
    const creds = new LlmCredentials(secret, () => now);
    const key = await creds.mint(claims);
    expect(key.startsWith('acsl.')).toBe(true);
    expect(await creds.verify(key)).toEqual({ ...claims, e: 1_000_000_000 + 3600, i: 1_000_000_000 });
    const [, body, mac] = key.split('.');
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, c: 'd'.repeat(32), e: 2e9 })).toString('base64url');
    expect(await creds.verify(`acsl.${forgedBody}.${mac}`)).toBeNull();
    expect(await creds.verify(`acsl.${body}.${'A'.repeat(43)}`)).toBeNull();
    expect(
      await new LlmCredentials(
        async () => Buffer.alloc(32, 8),
        () => now,
      ).verify(key),
    ).toBeNull();
    expect(await creds.verify('acsc.x.y')).toBeNull();
    now += 3600_000;
    expect(await creds.verify(key)).toBeNull();
  });
});

describe('upstream keys on AWS', () => {
  it('reads each ARN once, caches it, and reads again after the TTL (rotation without a redeploy)', async () => {
    const models = parsePlatformModels(
      [model({ api_key_env: undefined, api_key_arn: 'arn:aws:ssm:eu-west-1:1:parameter/k' })],
      't',
    );
    let reads = 0;
    let now = 0;
    const keys = arnKeys(
      models,
      async () => `key-${++reads}`,
      1000,
      () => now,
    );
    expect(await keys('platform/claude-sonnet')).toBe('key-1');
    expect(await keys('platform/claude-sonnet')).toBe('key-1');
    now = 1001;
    expect(await keys('platform/claude-sonnet')).toBe('key-2');
    await expect(keys('platform/none')).rejects.toThrow('No upstream key ARN');
  });
});

describe('the sandbox renews its gateway credential', () => {
  const key = (e: number, i?: number) =>
    `acsl.${Buffer.from(JSON.stringify({ c: 'x', e, ...(i === undefined ? {} : { i }) })).toString('base64url')}.${'A'.repeat(43)}`;
  it('keeps the one it holds until ten minutes before it expires, then fetches one (once for racing calls)', async () => {
    let now = 1_000_000_000_000;
    let fetches = 0;
    const first = key(now / 1000 + 3600);
    const second = key(now / 1000 + 7200);
    const current = renewingKey(
      first,
      async () => {
        fetches++;
        return second;
      },
      () => now,
    );
    expect(await current()).toBe(first);
    now += 51 * 60_000;
    expect(await Promise.all([current(), current(), current()])).toEqual([second, second, second]);
    expect(fetches).toBe(1);
    expect(credentialTimes('sk-not-a-credential').expiry).toBe(Number.POSITIVE_INFINITY);
  });

  it('renews a short-lived one when a sixth of its lifetime is left, and tells who masks it', async () => {
    let now = 1_000_000_000_000;
    const first = key(now / 1000 + 60, now / 1000);
    expect(renewalMargin(first)).toBe(10_000);
    expect(renewalMargin(key(now / 1000 + 3600, now / 1000))).toBe(600_000);
    const renewed: string[] = [];
    let n = 0;
    const current = renewingKey(
      first,
      async () => key(now / 1000 + 60 + ++n, now / 1000),
      () => now,
      (k) => renewed.push(k),
    );
    now += 49_000;
    expect(await current()).toBe(first);
    now += 2_000;
    const second = await current();
    expect(second).not.toBe(first);
    expect(renewed).toEqual([second]);
    // Forced (the gateway refused it): fetched again at once, whatever is left of it.
    const third = await current(true);
    expect(renewed).toEqual([second, third]);
  });

  it('tries once more with a fresh credential when the gateway answers 401, never more', async () => {
    const sent: string[] = [];
    let fresh = 0;
    const f = fetchWithKey(
      async (force) => (force ? `acsl.fresh-${++fresh}` : 'acsl.held'),
      async (_u, init) => {
        sent.push(new Headers(init?.headers).get('x-session-api-key')!);
        return new Response('{}', { status: 401 });
      },
    );
    expect((await f('http://x/v1/chat/completions', { method: 'POST', body: '{}' })).status).toBe(401);
    expect(sent).toEqual(['acsl.held', 'acsl.fresh-1']);
    // Nothing fresher to offer (the refetch failed or gave the same): the 401 as it came, no second try.
    let calls = 0;
    const same = fetchWithKey(
      async () => 'acsl.held',
      async () => {
        calls++;
        return new Response('{}', { status: 401 });
      },
    );
    expect((await same('http://x', { body: '{}' })).status).toBe(401);
    expect(calls).toBe(1);
  });

  it('keeps the old one when the fetch fails (the gateway then says what is wrong), and sends the current one in the SDK header', async () => {
    const now = 1_000_000_000_000;
    const old = key(now / 1000 + 60);
    expect(
      await renewingKey(
        old,
        () => Promise.reject(new Error('down')),
        () => now,
      )(),
    ).toBe(old);
    const seen: Headers[] = [];
    const f = fetchWithKey(
      async () => 'acsl.new',
      async (_u, init) => {
        seen.push(new Headers(init?.headers));
        return new Response('{}');
      },
    );
    await f('http://x/v1/chat/completions', { headers: { authorization: 'Bearer acsl.old' }, body: '{}' });
    await f('http://x/v1/messages', { headers: { 'x-api-key': 'acsl.old' } });
    expect(seen[0]!.get('authorization')).toBe('Bearer acsl.new');
    expect(seen[1]!.get('x-api-key')).toBe('acsl.new');
    // Also where CloudFront's origin access control leaves it (it overwrites Authorization), with the body's hash it needs.
    expect(seen[0]!.get('x-session-api-key')).toBe('acsl.new');
    expect(seen[0]!.get('x-amz-content-sha256')).toBe(
      '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
    );
  });
});
