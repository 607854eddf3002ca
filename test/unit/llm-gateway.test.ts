import { describe, expect, it } from 'vitest';
import { LlmCredentials } from '#shared/llm/credential.ts';
import { type GatewaySink, LlmGateway } from '#shared/llm/gateway.ts';
import type { IdempotentCall, LlmLedger, LlmRecord } from '#shared/llm/ledger.ts';
import type { StandingInput } from '#shared/usage/standing.ts';
import { modelsHash, parsePlatformModels } from '#shared/llm/platform-models.ts';
import { PlatformLlmPolicy } from '#shared/llm/policy.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import { parsePlans } from '#shared/plans/model.ts';

/**
 * The gateway's stream framing with a slow upstream (no network: a fake fetch, an in-memory ledger):
 * while the upstream has not answered a stream, the answer is already 200 text/event-stream with an
 * SSE comment per interval (CloudFront's origin read timeout applies to every gap); an upstream error
 * after that arrives as an SSE error event, and is not charged.
 */
const models = parsePlatformModels(
  [
    {
      model: 'platform/m',
      provider: 'openai',
      upstream_model: 'up',
      base_url: 'http://upstream.invalid/v1',
      api_key_env: 'K',
      usd_per_mtok: { input: 1, output: 1 },
      max_output_tokens: 100,
    },
  ],
  't',
);
const plans = parsePlans(
  {
    default_plan: 'p',
    plans: { p: { platform_models: ['platform/m'] }, pre: { platform_models: ['platform/m'], prepaid: true } },
  },
  't',
);

const sealer = LocalSealer.withKey(Buffer.alloc(32, 2));

const ZERO_DAY = { seconds: 0, factorSeconds: 0, vcpuSeconds: 0, gbSeconds: 0, computeMicroUsd: 0, records: 0 };

function memoryLedger() {
  const records: LlmRecord[] = [];
  const ledger: LlmLedger = {
    reserve: async () => null,
    settle: async () => {},
    committed: async () => 0,
    record: async (r) => {
      records.push(r);
      return { day: r.day, ...ZERO_DAY, llmMicroUsd: r.costMicroUsd };
    },
    takeRate: async () => null,
    addRateTokens: async () => {},
    claimIdempotencyKey: async () => null,
    completeIdempotencyKey: async () => {},
    releaseIdempotencyKey: async () => {},
    get: async (id) => records.find((r) => r.requestId === id),
  };
  return { ledger, records };
}

async function run(
  upstream: () => Promise<Response>,
  over: Partial<LlmLedger> = {},
  headers: Record<string, string> = {},
  org: { plan?: string; standing?: StandingInput } = {},
) {
  const credentials = new LlmCredentials(async () => Buffer.alloc(32, 1));
  const policy = new PlatformLlmPolicy(models, () => plans);
  const { ledger: base, records } = memoryLedger();
  const ledger = { ...base, ...over };
  const gateway = new LlmGateway({
    credentials,
    policy,
    plans: () => plans,
    key: async () => 'sk-platform',
    ledger,
    sealer: () => sealer,
    concurrency: 10,
    keepAliveMs: 20,
    fetch: (async () => upstream()) as typeof fetch,
    lookup: {
      conversationVersion: async () => 1,
      sandbox: async () => ({ status: 'RUNNING', generation: 1 }),
      user: async () => ({ status: 'active' }),
      org: async () => (org.plan ? { plan: org.plan, status: 'active' } : undefined),
      standing: async (_o, _d, prepaid) => org.standing ?? { days: [], prepaid },
    },
  });
  const credential = await credentials.mint({
    u: 'u',
    o: 'o',
    c: 'c'.repeat(32),
    v: 1,
    s: 's',
    g: 1,
    m: modelsHash(policy.allowed(undefined)),
  });
  const out: { head?: [number, Record<string, string>]; writes: string[]; ended: boolean } = {
    writes: [],
    ended: false,
  };
  const sink: GatewaySink = {
    head: (status, headers) => {
      out.head = [status, headers];
    },
    write: (c) => out.writes.push(typeof c === 'string' ? c : new TextDecoder().decode(c)),
    end: () => {
      out.ended = true;
    },
  };
  await gateway.handle(
    {
      path: '/llm/v1/chat/completions',
      headers: { 'x-session-api-key': credential, ...headers },
      body: Buffer.from(JSON.stringify({ model: 'platform/m', stream: true, messages: [] })),
      requestId: 'req-1',
      signal: new AbortController().signal,
    },
    sink,
  );
  return { out, records };
}

const later = <T>(ms: number, v: () => T) => new Promise<T>((r) => setTimeout(() => r(v()), ms));

describe('the gateway with a slow upstream', () => {
  it('answers 200 text/event-stream at once and sends SSE comments until the upstream answers', async () => {
    const { out, records } = await run(() =>
      later(
        90,
        () =>
          new Response(
            `data: ${JSON.stringify({ choices: [{ delta: { content: 'hi' } }] })}\n\ndata: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } })}\n\ndata: [DONE]\n\n`,
            { headers: { 'content-type': 'text/event-stream' } },
          ),
      ),
    );
    expect(out.head![0]).toBe(200);
    expect(out.head![1]['content-type']).toBe('text/event-stream');
    const comments = out.writes.filter((w) => w.startsWith(': waiting'));
    expect(comments.length).toBeGreaterThanOrEqual(2);
    expect(out.writes.join('')).toContain('[DONE]');
    expect(out.ended).toBe(true);
    expect(records).toEqual([expect.objectContaining({ requestId: 'req-1', input: 3, output: 1, estimated: false })]);
  });

  it('sends an upstream error after that as an SSE error event, and charges nothing', async () => {
    const { out, records } = await run(() =>
      later(
        60,
        () =>
          new Response(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }), {
            status: 529,
            headers: { 'content-type': 'application/json' },
          }),
      ),
    );
    expect(out.head![0]).toBe(200);
    expect(out.writes.at(-1)).toContain('data: {"error":{"message":"overloaded"');
    expect(records).toEqual([]);
  });
});

describe('Idempotency-Key', () => {
  it('is released by a refusal (a retry after a 429 with the same key runs); a repeat after the answer gets it back, not charged', async () => {
    const keys = new Map<string, IdempotentCall>();
    let rated = 0;
    const ledger: Partial<LlmLedger> = {
      takeRate: async () => (++rated === 1 ? 'llm_requests_per_minute' : null),
      claimIdempotencyKey: async (_c, k, claim) => {
        const had = keys.get(k);
        if (had) return had;
        keys.set(k, { requestId: claim.requestId, requestHash: claim.requestHash, state: 'in_progress' });
        return null;
      },
      completeIdempotencyKey: async (_c, k, _r, answer) => {
        keys.set(k, {
          ...keys.get(k)!,
          ...(answer === 'too_large' ? { state: 'too_large' } : { state: 'completed', answer }),
        });
      },
      releaseIdempotencyKey: async (_c, k) => {
        keys.delete(k);
      },
    };
    const answer = () =>
      Promise.resolve(
        new Response(
          `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } })}\n\ndata: [DONE]\n\n`,
          {
            headers: { 'content-type': 'text/event-stream' },
          },
        ),
      );
    const first = await run(answer, ledger, { 'idempotency-key': 'k1' });
    expect(first.out.head![0]).toBe(429);
    expect(keys.size).toBe(0);
    const retry = await run(answer, ledger, { 'idempotency-key': 'k1' });
    expect(retry.out.head![0]).toBe(200);
    expect(retry.records).toHaveLength(1);
    expect(keys.get('k1')?.state).toBe('completed');
    const never = () => Promise.reject(new Error('a repeat must not be forwarded'));
    const repeat = await run(never, ledger, { 'idempotency-key': 'k1' });
    expect(repeat.out.head).toEqual([200, expect.objectContaining({ 'idempotent-replayed': 'true' })]);
    expect(repeat.out.writes.join('')).toBe(retry.out.writes.join(''));
    expect(repeat.records).toEqual([]);
  });
});

describe('prepaid credits at the gateway', () => {
  const today = new Date().toISOString().slice(0, 10);
  const account = { grantedMicroUsd: 1_000_000, since: today, openingMicroUsd: 0, grants: 1 };
  const spent = (micro: number): StandingInput => ({
    days: [
      { day: today, seconds: 0, factorSeconds: 0, vcpuSeconds: 0, gbSeconds: 0, computeMicroUsd: micro, records: 1 },
    ],
    account,
    prepaid: true,
  });
  const never = () => Promise.reject(new Error('the upstream must not be called'));

  it('refuses a call once the balance is spent: 402 credits_exhausted in the provider shape, nothing forwarded', async () => {
    const { out, records } = await run(never, {}, {}, { plan: 'pre', standing: spent(1_000_000) });
    expect(out.head![0]).toBe(402);
    expect(JSON.parse(out.writes.join(''))).toEqual({
      error: {
        message: expect.stringMatching(/prepaid credits are spent/),
        type: 'budget_exceeded',
        code: 'credits_exhausted',
      },
    });
    expect(records).toEqual([]);
  });

  it("holds this month's LLM spend to the balance left: the reservation's limit, and its refusal named credits_exhausted", async () => {
    let limit = 0;
    const ledger: Partial<LlmLedger> = {
      reserve: async (_r, l) => {
        limit = l.orgMaxMicroUsd;
        return { refused: 'monthly_spend_usd', used: 0 };
      },
    };
    const { out } = await run(never, ledger, {}, { plan: 'pre', standing: spent(999_000) });
    // 1000 micro-USD left (and no LLM spend this month yet): the month's committed LLM spend may reach it.
    expect(limit).toBe(1000);
    expect(out.head![0]).toBe(402);
    expect(JSON.parse(out.writes.join('')).error.code).toBe('credits_exhausted');
    // Not prepaid: the plan's monthly spend is the limit, as before.
    await run(never, ledger, {}, {});
    expect(limit).toBe(5_000_000);
  });
});
