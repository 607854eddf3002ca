import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, startSandbox, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ofType, type Template } from '#test/tier/template.ts';

/*
 * The usage notices' bus on the synthesized stack (test/tier/README.md): every function's plans made a
 * plan of 0.001 sandbox hours (3.6 s; on_limit warn, so nothing pauses), a sandbox started through the
 * API, and one heartbeat sent with its session key after 4 s: the heartbeat bundle's record crosses 80%
 * and 100% at once and puts one event per threshold on the stack's usage bus, through the fake
 * EventBridge and its IAM check (`events:PutEvents` on that bus, granted by the capability
 * `usage:notify`). A second heartbeat crosses nothing and puts nothing.
 */
const TINY = { default_plan: 'tiny', plans: { tiny: { sandbox_hours_per_month: 0.001, on_limit: 'warn' } } };

function tinyPlans(t: Template): void {
  let changed = 0;
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    const vars = r.Properties?.Environment?.Variables;
    if (vars && 'PLANS' in vars) {
      vars.PLANS = JSON.stringify(TINY);
      changed++;
    }
  }
  expect(changed).toBeGreaterThan(0);
}

let tier: TierStack;
beforeAll(async () => {
  tier = await startTier({ mutate: tinyPlans });
}, 120_000);
afterAll(async () => {
  await tier?.stop();
});

describe('usage notices on the operator bus', () => {
  it('the heartbeat bundle that crosses 80% and 100% puts one event each on the usage bus, allowed by IAM', async () => {
    const key = await createKey(tier, 'bus-user');
    const sb = await startSandbox(tier, key);
    const sessionKey = (await tier.sandboxKey(sb.id))!;
    expect(sessionKey).toBeTruthy();
    // More than 3.6 s after the check-in; the program's own first heartbeat comes 30 s after it.
    await new Promise((r) => setTimeout(r, 4_000));
    const beat = await tier.call('POST', `/api/v1/sandboxes/${sb.id}/bridge/heartbeat`, {
      key: sessionKey,
      body: { active: false },
    });
    expect(beat.status, beat.text).toBe(200);
    const events = await until(
      tier,
      'two usage events',
      async () => tier.aws.busEvents,
      (e) => e.length >= 2,
      10_000,
    );
    expect(events[0]!.bus).toMatch(/^arn:aws:events:[a-z0-9-]+:\d{12}:event-bus\/.*UsageBus/);
    expect(events.map((e) => [e.source, e.detailType, e.detail.limit, e.detail.threshold]).sort()).toEqual([
      ['acs.usage', 'acs.usage.threshold', 'sandbox_hours_per_month', 100],
      ['acs.usage', 'acs.usage.threshold', 'sandbox_hours_per_month', 80],
    ]);
    expect(events[0]!.detail).toMatchObject({
      org_id: expect.stringMatching(/^org_/),
      limit_value: 0.001,
      unit: 'hours',
      period: new Date().toISOString().slice(0, 7),
    });
    // Put by the heartbeat's own role, allowed by its policy; nothing denied anywhere.
    const puts = tier.aws.calls.filter((c) => c.operation === 'events:PutEvents');
    expect(puts.length).toBe(2);
    expect(puts.every((c) => c.allowed && /Heartbeat/i.test(c.principal))).toBe(true);
    expect(tier.aws.denials).toEqual([]);
    // Above both thresholds already: the next heartbeat puts nothing.
    await new Promise((r) => setTimeout(r, 1_100));
    await tier.call('POST', `/api/v1/sandboxes/${sb.id}/bridge/heartbeat`, {
      key: sessionKey,
      body: { active: false },
    });
    expect(tier.aws.busEvents).toHaveLength(2);
  }, 120_000);
});
