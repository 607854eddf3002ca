import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '#infra/config.ts';
import { envPlans, filePlans } from '#shared/plans/load.ts';
import { DEFAULT_PLANS, PLAN_DEFAULTS, parsePlans } from '#shared/plans/model.ts';

/** The contract's plans, as docs/SAAS-CONTRACTS fixes them. */
const CONTRACT = {
  default_plan: 'free',
  plans: {
    free: {
      max_running_sandboxes: 2,
      sandbox_hours_per_month: 20,
      max_resource_factor: 1,
      monthly_spend_usd: 5,
      on_limit: 'stop',
      platform_models: ['platform/claude-sonnet'],
      llm_requests_per_minute: 60,
      llm_tokens_per_minute: 200000,
      max_stream_sockets_per_user: 20,
      max_stream_sockets_per_conversation: 5,
      max_conversations: 1000,
      max_paused_sandboxes: 20,
      max_events_per_conversation: 100000,
      max_event_bytes_per_org: 1000000000,
      events_per_sandbox_per_second: 200,
      requests_per_user_per_minute: 600,
    },
  },
};

describe('plans', () => {
  it("config/plans.json is the contract's free plan, and the defaults are that plan, member for member", () => {
    expect(JSON.parse(readFileSync(new URL('../../config/plans.json', import.meta.url), 'utf8'))).toEqual(CONTRACT);
    // Beyond the contract's members, the ones "Pay per use" added, off by default: prepaid credits.
    const free = { ...CONTRACT.plans.free, prepaid: false };
    expect(PLAN_DEFAULTS).toEqual(free);
    expect(DEFAULT_PLANS.plan(undefined)).toEqual(free);
  });

  it('fills every member a plan omits from its default; an unknown plan name gets the default plan', async () => {
    const plans = parsePlans(
      { default_plan: 'free', plans: { free: {}, team: { max_conversations: 5, on_limit: 'warn' } } },
      'test',
    );
    expect(plans.plan('team')).toEqual({ ...PLAN_DEFAULTS, max_conversations: 5, on_limit: 'warn' });
    expect(plans.plan('gone')).toEqual(PLAN_DEFAULTS);
    expect(plans.plan(undefined)).toEqual(PLAN_DEFAULTS);
  });

  it.each([
    [{ default_plan: 'pro', plans: { free: {} } }, 'at default_plan: must name one of the plans'],
    [{ default_plan: 'free', plans: { free: { max_conversations: -1 } } }, 'at plans.free.max_conversations'],
    [{ default_plan: 'free', plans: { free: { max_conversatons: 5 } } }, 'at plans.free'],
    [{ default_plan: 'free', plans: { free: { on_limit: 'explode' } } }, 'at plans.free.on_limit'],
    [{ default_plan: 'free', plans: { 'Bad Name': {} } }, 'at plans.Bad Name'],
    [{ plans: {} }, 'at default_plan'],
  ])('refuses %j naming the key', (raw, where) => {
    expect(() => parsePlans(raw, 'PLANS_FILE x.json')).toThrow(`Configuration error: PLANS_FILE x.json ${where}`);
  });

  it('locally reads PLANS_FILE, failing at start naming the file and the key; on AWS reads PLANS (empty: the defaults)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plans-'));
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ default_plan: 'p', plans: { p: { events_per_sandbox_per_second: 7 } } }));
    expect(filePlans(good).plan(undefined).events_per_sandbox_per_second).toBe(7);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ default_plan: 'p', plans: { p: { events_per_sandbox_per_second: 0 } } }));
    expect(() => filePlans(bad)).toThrow(`PLANS_FILE ${bad} at plans.p.events_per_sandbox_per_second`);
    expect(() => filePlans(join(dir, 'missing.json'))).toThrow(/PLANS_FILE: cannot read plans/);
    expect(envPlans('')).toBe(DEFAULT_PLANS);
    expect(envPlans(JSON.stringify(CONTRACT)).plan('free')).toEqual(PLAN_DEFAULTS);
    expect(() => envPlans('{')).toThrow(/PLANS is not JSON/);
  });

  it('the CDK context key `plans` is checked at synth, naming the key', () => {
    expect(loadConfig((k) => (k === 'plans' ? JSON.stringify(CONTRACT) : undefined)).plans).toEqual(CONTRACT);
    expect(() =>
      loadConfig((k) =>
        k === 'plans' ? { default_plan: 'free', plans: { free: { max_conversations: 0 } } } : undefined,
      ),
    ).toThrow('Invalid configuration: context key "plans" at plans.free.max_conversations');
  });
});
