import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { llmRecordItem } from '#shared/llm/dynamo-ledger.ts';
import type { LlmRecord } from '#shared/llm/ledger.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { tableName } from '#shared/store/dynamo.ts';
import { batchPut } from '#shared/store/query.ts';
import { computeRecordItem, DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { UsageReconcile } from '#shared/usage/reconcile.ts';
import { usageRetentionDays } from '#shared/usage/retention.ts';
import type { ComputeRecord } from '#shared/usage/usage-store.ts';
import { startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { reply, startScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { ROOMY_PLANS, startTestStack } from '#test/helpers/stack.ts';
import { json } from './http.ts';
import { count, interleaved, ms, percentile, time } from './stats.ts';

const SMALL = 100;
/** `BENCH_USAGE_RECORDS` makes a quick run smaller; the recorded run uses 100,000. */
const LARGE = Number(process.env.BENCH_USAGE_RECORDS ?? 100_000);
const RUNS = Number(process.env.BENCH_USAGE_RUNS ?? 200);
const DAYS = 30;
const MONTH = '2026-10';
const USERS = 3;
const MODELS = ['platform/bench-a', 'platform/bench-b', 'platform/bench-c'];
const step = (what: string, section = 'usage') => process.stderr.write(`bench: ${section}: ${what}\n`);

/** What the written records add up to: the route must answer exactly this. */
interface Truth {
  vcpuSeconds: number;
  llmInputTokens: number;
  llmMicroUsd: number;
}

/**
 * `n` records of one organization over the month's 30 days and 3 users, on odd days LLM calls of one
 * of three models, on even days compute intervals of 60 s: written in bulk in the ledger's own item shape.
 */
async function writeRecords(orgId: string, owner: string, n: number): Promise<Truth> {
  const retention = usageRetentionDays();
  const truth: Truth = { vcpuSeconds: 0, llmInputTokens: 0, llmMicroUsd: 0 };
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    // Both organizations get the same days, user-days and model-days (the first 90 records cover them
    // all), so the two answers hold the same number of totals and only the records behind them differ.
    const day = `${MONTH}-${String(1 + (i % DAYS)).padStart(2, '0')}`;
    const block = Math.floor(i / DAYS);
    const start = Date.parse(`${day}T00:00:00Z`) + block * 60_000;
    const userId = block % USERS === 0 ? owner : `${orgId}-member-${block % USERS}`;
    if (i % 2 === 1) {
      const rec: LlmRecord = {
        requestId: `bench-${orgId}-${i}`,
        orgId,
        userId,
        conversationId: `bench-conversation-${i % 50}`,
        model: MODELS[block % MODELS.length]!,
        upstreamModel: 'bench-upstream',
        input: 1000 + (i % 7),
        output: 200,
        cachedInput: 0,
        cacheWriteInput: 0,
        costMicroUsd: 6000 + (i % 7),
        price: { input: 3, output: 15, markup: 0.2 },
        estimated: false,
        day,
        at: new Date(start).toISOString(),
      };
      truth.llmInputTokens += rec.input;
      truth.llmMicroUsd += rec.costMicroUsd;
      items.push(llmRecordItem(rec, retention));
    } else {
      const rec: ComputeRecord = {
        sandboxId: `bench-${orgId}-${i}`,
        generation: 1,
        orgId,
        userId,
        specId: 'default',
        day,
        from: new Date(start).toISOString(),
        to: new Date(start + 60_000).toISOString(),
        cpuUnits: 1024,
        memoryMiB: 2048,
        resourceFactor: 1,
        price: {
          region: 'us-east-1',
          spot: false,
          vcpu_hour_usd: '0.03238',
          gb_hour_usd: '0.00356',
          markup_percent: '0',
        },
        recordedAt: new Date(start + 60_000).toISOString(),
        seconds: 60,
        factorSeconds: 60,
        vcpuSeconds: 60,
        gbSeconds: 120,
        computeMicroUsd: 658,
      };
      truth.vcpuSeconds += rec.vcpuSeconds;
      items.push(computeRecordItem(rec, retention));
    }
  }
  const table = tableName('usage');
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < items.length) {
        const from = next;
        next = Math.min(items.length, next + 100);
        await batchPut(table, items.slice(from, next));
      }
    }),
  );
  return truth;
}

/**
 * `GET /api/v1/usage` for a month of an organization with 100 records against one with 100,000: the
 * records written in bulk in the ledger's item shape, their totals built by the daily reconcile from
 * the records (the code that repairs them in production; writing 100,000 records through the metering
 * path would take minutes of dynalite and measure the same items), then each `group_by` of both
 * organizations timed side by side.
 */
export async function benchUsage(): Promise<string> {
  const stack = await startTestStack({ sweepIntervalMs: 3_600_000 });
  try {
    const keys = { small: await stack.newUser('usage-small'), large: await stack.newUser('usage-large') };
    const orgs = { small: await stack.orgOf(keys.small), large: await stack.orgOf(keys.large) };
    step(`writing ${count(SMALL)} + ${count(LARGE)} records`);
    const truth = { small: {} as Truth, large: {} as Truth };
    const fillMs = await time(async () => {
      truth.small = await writeRecords(orgs.small, 'usage-small', SMALL);
      truth.large = await writeRecords(orgs.large, 'usage-large', LARGE);
    });
    step('building the totals with the daily reconcile');
    const reconcile = new UsageReconcile({
      usage: new DynamoUsageStore(),
      sandboxes: new DynamoSandboxStore(),
      conversations: new DynamoConversationStore(),
      settleMs: 0,
    });
    const days = Array.from({ length: DAYS }, (_, d) => `${MONTH}-${String(d + 1).padStart(2, '0')}`);
    let repaired = 0;
    const reconcileMs = await time(async () => {
      repaired = (await reconcile.run({ days })).totals.repaired;
    });
    const path = (groupBy: string) => `/api/v1/usage?from=${MONTH}-01&to=${MONTH}-31&group_by=${groupBy}`;
    // The route must answer what was written, to the token and the micro-dollar.
    for (const size of ['small', 'large'] as const) {
      const byDay = await json(stack, 'GET', path('day'), { key: keys[size] });
      const sum = (f: string) => byDay.items.reduce((a: number, it: Record<string, number>) => a + it[f]!, 0);
      const got = { vcpu: sum('vcpu_seconds'), input: sum('llm_input_tokens') };
      if (got.vcpu !== truth[size].vcpuSeconds || got.input !== truth[size].llmInputTokens)
        throw new Error(`usage of ${size}: ${JSON.stringify(got)}, records say ${JSON.stringify(truth[size])}`);
    }
    const groups = ['day', 'user', 'model'] as const;
    const fns: Record<string, () => Promise<unknown>> = {};
    for (const g of groups)
      for (const size of ['small', 'large'] as const)
        fns[`${g}|${size}`] = () => json(stack, 'GET', path(g), { key: keys[size] });
    step('timing');
    const m = await interleaved(RUNS, fns);
    const p = (k: string, q: number) => percentile(m[k]!, q);
    const rows = groups.map((g) => {
      const [small, large] = [p(`${g}|small`, 50), p(`${g}|large`, 50)];
      return `| \`group_by=${g}\` | ${ms(small)} / ${ms(p(`${g}|small`, 99))} | ${ms(large)} / ${ms(p(`${g}|large`, 99))} | ${(large / small).toFixed(2)}× |`;
    });
    return [
      `## Usage: a month of ${count(SMALL)} and of ${count(LARGE)} records`,
      '',
      `\`GET /api/v1/usage\` for October of an organization with ${count(SMALL)} ledger records and of one with ${count(LARGE)}, both over ${DAYS} days, ${USERS} users and ${MODELS.length} platform models (LLM calls on odd days, compute intervals on even days; the first 90 records cover every organization-day, user-day and model-day, so both answers hold the same totals and only the records behind them differ). The records are written in bulk in the ledger's own item shape (${(fillMs / 1000).toFixed(0)} s) and their day totals built by the daily reconcile from them (${(reconcileMs / 1000).toFixed(1)} s for the ${count(SMALL + LARGE)} records of ${DAYS} days, ${count(repaired)} totals written: the reconcile's own cost at this size). The route reads totals only (one Query per organization-day, user-day or model-day range), never records, so its cost follows days × users or models, not records: target within 1.2× (issue 22). Both answers are checked against the records' sums first. ${RUNS} rounds after 20 warm-up ones, interleaved, p50 / p99.`,
      '',
      `| grouping | ${count(SMALL)} records | ${count(LARGE)} records | p50 ratio |`,
      '|---|---|---|---|',
      ...rows,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}

const SANDBOXES = Number(process.env.BENCH_METERING_SANDBOXES ?? 20);
/** How long every sandbox is held RUNNING after its conversation started (the recorded run: 90 s, three heartbeats). */
const HOLD_MS = Number(process.env.BENCH_METERING_HOLD_MS ?? 90_000);
const TOKENS = { prompt_tokens: 1234, completion_tokens: 56 };

/**
 * Exactness (issue 22): 20 sandboxes, each a conversation on a platform model whose scripted upstream
 * reports known token counts, held RUNNING for a known time and paused together; the ledger's compute
 * per sandbox is compared with the window the client saw it run in, and its tokens with the upstream's.
 */
export async function benchMetering(): Promise<string> {
  const llm = await startScriptedLlm();
  for (let i = 0; i < SANDBOXES * 3; i++) llm.enqueue({ ...reply.finish('done'), usage: TOKENS });
  const dir = mkdtempSync(join(tmpdir(), 'bench-metering-'));
  writeFileSync(
    join(dir, 'llms.json'),
    JSON.stringify([
      {
        model: 'platform/exact',
        provider: 'openai',
        upstream_model: 'scripted',
        base_url: llm.baseUrl,
        api_key_env: 'BENCH_EXACT_KEY',
        usd_per_mtok: { input: 3, output: 15 },
        max_output_tokens: 1000,
      },
    ]),
  );
  const roomy = JSON.parse(readFileSync(ROOMY_PLANS, 'utf8'));
  roomy.plans.roomy.platform_models = ['platform/exact'];
  writeFileSync(join(dir, 'plans.json'), JSON.stringify(roomy));
  process.env.BENCH_EXACT_KEY = 'sk-bench-exact';
  const stack = await startTestStack({
    sweepIntervalMs: 3_600_000,
    sandboxes: { maxRunning: SANDBOXES },
    platformLlmsFile: join(dir, 'llms.json'),
    plansFile: join(dir, 'plans.json'),
  });
  try {
    await json(stack, 'POST', '/api/settings', { body: { llm_model: 'platform/exact' } });
    step(`starting ${SANDBOXES} conversations`, 'metering');
    const runs = await Promise.all(
      Array.from({ length: SANDBOXES }, async (_, i) => {
        const postedAt = Date.now();
        const body = { initial_message: { content: [{ type: 'text', text: `task ${i}` }] } };
        const task = await startConversation(stack, body);
        if (task.status !== 'READY') throw new Error(`conversation ${i}: ${task.detail}`);
        return { postedAt, readyAt: Date.now(), sandboxId: task.sandbox_id!, conversationId: task.app_conversation_id };
      }),
    );
    await Promise.all(
      runs.map((r) => waitForExecutionStatus(stack, r.conversationId, ['finished'], undefined, 120_000)),
    );
    const last = Math.max(...runs.map((r) => r.readyAt));
    await new Promise((r) => setTimeout(r, Math.max(0, last + HOLD_MS - Date.now())));
    step('pausing them together', 'metering');
    const paused = await Promise.all(
      runs.map(async (r) => {
        const sentAt = Date.now();
        await json(stack, 'POST', `/api/v1/sandboxes/${r.sandboxId}/pause`);
        return { ...r, sentAt, answeredAt: Date.now() };
      }),
    );
    const usage = new DynamoUsageStore();
    const errors: number[] = [];
    let outside = 0;
    for (const r of paused) {
      const records = await usage.computeRecords(r.sandboxId, 1);
      const billed = records.reduce((a, rec) => a + rec.seconds, 0);
      // The true running time lies in [pause sent - READY seen, pause answered - start posted].
      const [low, high] = [(r.sentAt - r.readyAt) / 1000, (r.answeredAt - r.postedAt) / 1000];
      if (billed < low - 1 || billed > high + 1) outside++;
      errors.push(billed < low ? low - billed : billed > high ? billed - high : 0);
    }
    const from = new Date(runs[0]!.postedAt).toISOString().slice(0, 10);
    const to = new Date().toISOString().slice(0, 10);
    const totals = await json(stack, 'GET', `/api/v1/usage?from=${from}&to=${to}&group_by=day`);
    const sum = (f: string) => totals.items.reduce((a: number, it: Record<string, number>) => a + it[f]!, 0);
    const answered = llm.requests.length;
    const tokens = { input: sum('llm_input_tokens'), output: sum('llm_output_tokens') };
    const want = { input: answered * TOKENS.prompt_tokens, output: answered * TOKENS.completion_tokens };
    if (tokens.input !== want.input || tokens.output !== want.output)
      throw new Error(
        `tokens: the ledger has ${JSON.stringify(tokens)}, the upstream reported ${JSON.stringify(want)}`,
      );
    const windows = paused.map((r) => (r.answeredAt - r.postedAt - (r.sentAt - r.readyAt)) / 1000);
    return [
      `## Metering exactness: ${SANDBOXES} sandboxes`,
      '',
      `${SANDBOXES} conversations of one organization on a platform model, each sandbox held RUNNING about ${HOLD_MS / 1000} s and paused together; the scripted upstream reports ${TOKENS.prompt_tokens} input and ${TOKENS.completion_tokens} output tokens per call. A sandbox's true running time is only known to the client as a window (from the start posted to the pause answered, at most; from the conversation READY to the pause sent, at least: ${ms(percentile(windows, 50) * 1000, 0)} wide p50). Compute is accrued at each heartbeat (every 30 s) and closed by the pause.`,
      '',
      '| measure | result |',
      '|---|---|',
      `| sandboxes whose billed seconds fall outside their window (±1 s of rounding) | ${outside} of ${SANDBOXES} |`,
      `| billed seconds outside the window, p50 / max | ${percentile(errors, 50).toFixed(1)} s / ${Math.max(...errors).toFixed(1)} s (target: within one heartbeat interval, 30 s) |`,
      `| LLM calls answered by the upstream | ${answered} |`,
      `| input / output tokens in the ledger | ${count(tokens.input)} / ${count(tokens.output)}: exactly the upstream's (checked) |`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
    await llm.close();
  }
}
