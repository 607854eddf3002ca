import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFuzz } from '#test/adversarial/fuzz.ts';
import { createKey } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';

/**
 * A share of the adversarial fuzz (test/adversarial/fuzz.ts) through the synthesized stack: the same
 * hostile requests, but through the emulated HTTP API, the real authorizer and route bundles from
 * cdk.out with only the template's environment. A 5xx here is a crash of a deployed function (or a
 * denied AWS call), which the local stack cannot show. Concurrency stays low: each concurrent call of
 * a function is a Node process of its own.
 */
const REQUESTS = Number(process.env.TIER_FUZZ_REQUESTS ?? 1_500);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

let tier: TierStack;

beforeAll(async () => {
  tier = await startTier();
}, 120_000);
afterAll(async () => {
  await tier?.stop();
});

describe('fuzz through the synthesized stack', () => {
  it(`answers ${REQUESTS} hostile requests without one 5xx`, async () => {
    const userKey = await createKey(tier, 'mallory');
    const result = await runFuzz({ baseUrl: tier.url, userKey }, { requests: REQUESTS, concurrency: 2, seed: SEED });
    console.log(`tier fuzz seed ${SEED}: ${result.sent} answers, statuses ${JSON.stringify(result.byStatus)}`);
    expect(result.serverErrors, `seed ${SEED}\n${tier.explain()}`).toEqual([]);
    expect(result.sent).toBeGreaterThanOrEqual(REQUESTS * 0.99);
    // No AWS call of the fuzz was denied: a denial is a missing grant, whatever status it became.
    expect(tier.aws.denials).toEqual([]);
    expect(tier.api.faults).toEqual([]);
  }, 300_000);
});
