import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { json } from './http.ts';
import { ms as msDigits, p50p99, percentile } from './stats.ts';

/** Starts measured (BENCH_POOL_STARTS for a quick check of the section). */
const STARTS = Number(process.env.BENCH_POOL_STARTS ?? 20);
const ms = (n: number) => msDigits(n, 0);

/** The default spec's ready standby, once the refill after the last claim has one checked in (unmeasured). */
async function standbyReady(): Promise<void> {
  await waitFor(
    'a ready standby',
    async () =>
      (await new DynamoPoolStore().listStandbys('local-default')).some((s) => s.status === 'ready') ? true : undefined,
    { timeoutMs: 30_000, intervalMs: 10 },
  );
}

async function untilRunning(stack: TestStack, id: string): Promise<{ start_phases: Record<string, number> }> {
  return waitFor(
    `sandbox ${id} to be RUNNING`,
    async () => {
      const [s] = await json(stack, 'GET', `/api/v1/sandboxes?id=${id}`);
      if (s.status === 'RUNNING') return s;
      if (s.status !== 'STARTING') throw new Error(`sandbox ${id} is ${s.status}: ${s.detail}`);
      return undefined;
    },
    { timeoutMs: 60_000, intervalMs: 10 },
  );
}

/**
 * Local starts served by the warm pool (`npm start`'s pool of 1): start → RUNNING when a standby is
 * ready, with the claim and the standby's acknowledged binding as phases of their own.
 */
export async function benchWarmPool(): Promise<string> {
  const stack = await startTestStack({ sweepIntervalMs: 3_600_000, warmPoolSize: 1 });
  try {
    const total: number[] = [];
    const claim: number[] = [];
    const checkIn: number[] = [];
    let cold = 0;
    // One unmeasured start warms the handlers and the page cache.
    for (let i = -1; i < STARTS; i++) {
      await standbyReady();
      const t = performance.now();
      const { id } = await json(stack, 'POST', '/api/v1/sandboxes');
      const s = await untilRunning(stack, id);
      const elapsed = performance.now() - t;
      await json(stack, 'DELETE', `/api/v1/sandboxes/${id}`);
      if (i < 0) continue;
      if (!s.start_phases.warm) {
        cold++;
        continue;
      }
      total.push(elapsed);
      claim.push(s.start_phases.claim_ms!);
      checkIn.push(s.start_phases.check_in_ms!);
    }
    if (!total.length) throw new Error('bench: no start was served by the pool');
    return [
      '## Sandboxes from the warm pool (local)',
      '',
      'The default spec with a pool of 1, as `npm start` keeps it: before each start the refill after the last claim',
      'has a standby checked in (unmeasured); the start claims it (one conditional write), renames its directory into',
      "the sandbox's and pushes the binding, which the waiting program exchanges at the sandbox's check-in. A start is",
      '`POST /api/v1/sandboxes` until `GET` shows RUNNING (polled every 10 ms); the claim and the check-in after it',
      `are the start's own phases (\`start_phases\`). ${cold ? `${cold} of ${STARTS} starts found no standby and are left out.` : ''}`,
      '',
      '| Measure | Value |',
      '|---|---|',
      `| start → RUNNING from the pool, p50 / p99 of ${total.length} | ${p50p99(total, 0)} |`,
      `| of which the claim (\`claim_ms\`), p50 | ${ms(percentile(claim, 50))} |`,
      `| of which claim → acknowledged binding (\`check_in_ms\`), p50 | ${ms(percentile(checkIn, 50))} |`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
