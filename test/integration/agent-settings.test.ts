import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, conversation, startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

/** The agent settings and start options as the API takes them, and what reaches the agent in its sandbox. */
let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
beforeAll(async () => {
  // No settings for the dev user: each test saves its own user's.
  agent = await startAgentStack({ settings: null });
  ({ stack, llm } = agent);
});
afterAll(() => agent?.stop());

describe('agent options and settings', () => {
  it('lists the agents and security analyzers (user auth)', async () => {
    expect((await stack.call('GET', '/api/options/agents')).body).toEqual(['CodeActAgent', 'PlanningAgent']);
    expect((await stack.call('GET', '/api/options/security-analyzers')).body).toEqual(['llm']);
    expect((await stack.call('GET', '/api/options/agents', { key: null })).status).toBe(401);
    expect((await stack.call('GET', '/api/options/security-analyzers', { key: 'sk-not-a-key' })).status).toBe(401);
  });

  it('refuses an unknown agent or analyzer with a 422 listing the choices; accepts condenser_max_size', async () => {
    const key = await stack.newUser('agent-options');
    for (const [body, field, listed] of [
      [{ security_analyzer: 'invariant' }, 'security_analyzer', 'llm'],
      [{ agent: 'BrowsingAgent' }, 'agent', 'CodeActAgent, PlanningAgent'],
      [{ agent: '' }, 'agent', 'CodeActAgent'],
      [{ condenser_max_size: 5 }, 'condenser_max_size', 'at least 20'],
      [{ condenser_max_size: 20.5 }, 'condenser_max_size', 'integer'],
    ] as const) {
      const res = await stack.call('POST', '/api/settings', { key, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', field]);
      expect(res.body.detail[0].msg).toContain(listed);
    }
    expect((await stack.call('POST', '/api/settings', { key, body: { security_analyzer: 'none' } })).status).toBe(200);
    const ok = await stack.call('POST', '/api/settings', {
      key,
      body: { security_analyzer: '', agent: 'PlanningAgent', condenser_max_size: 60 },
    });
    expect(ok.status).toBe(200);
    const got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got).toMatchObject({ security_analyzer: '', agent: 'PlanningAgent', condenser_max_size: 60 });
    expect(
      (await stack.call('POST', '/api/settings', { key, body: { security_analyzer: null, condenser_max_size: null } }))
        .status,
    ).toBe(200);
    expect((await stack.call('GET', '/api/settings', { key })).body).toMatchObject({
      security_analyzer: null,
      condenser_max_size: null,
    });
  });

  it('agent_type "plan", language, security_analyzer, the condenser and search_api_key reach the agent in its sandbox', async () => {
    const key = await stack.newUser('agent-settings');
    llm.enqueue(reply.finish('Plan written'));
    await stack.call('POST', '/api/settings', {
      key,
      body: {
        llm_model: 'm',
        llm_api_key: 'sk-agent',
        llm_base_url: llm.baseUrl,
        language: 'fr',
        security_analyzer: 'llm',
        condenser_max_size: 40,
        enable_default_condenser: true,
        search_api_key: 'tvly-secret-key-1',
      },
    });
    const task = await startConversation(
      stack,
      { agent_type: 'plan', initial_message: { content: [{ type: 'text', text: 'Plan a README' }] } },
      key,
    );
    const cid = task.app_conversation_id;
    await waitForExecutionStatus(stack, cid, ['finished'], key);

    const sandboxKey = (await stack.sandboxKey(task.sandbox_id!))!;
    const config = (
      await stack.call('GET', `/api/v1/webhooks/${task.sandbox_id}/conversations/${cid}/start-config`, {
        key: sandboxKey,
      })
    ).body;
    expect(config).toMatchObject({
      agent_type: 'plan',
      agent: 'PlanningAgent',
      security_analyzer: 'llm',
      condenser: { enabled: true, max_size: 40 },
      search: { api_key: 'tvly-secret-key-1' },
      language: 'fr',
    });

    const first = llm.requests.at(-1)!.body;
    expect(first.messages[0].content).toContain('French (fr)');
    expect(first.messages[0].content).toContain('PLAN.md');
    // The planner: no shell, no web tools, and every tool but think/finish asks for a risk rating.
    expect(first.tools.map((t: any) => t.function.name).sort()).toEqual(['finish', 'str_replace_editor', 'think']);
    const editor = first.tools.find((t: any) => t.function.name === 'str_replace_editor').function.parameters;
    expect(editor.properties.security_risk.enum).toEqual(['LOW', 'MEDIUM', 'HIGH']);
    // The search key is a secret: never in the events.
    const events = (await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}`, { key })).body.items;
    expect(JSON.stringify(events)).not.toContain('tvly-secret-key-1');
  });
});

describe('the agent in a real sandbox', () => {
  it('keeps its shell between steps; after a sandbox pause and resume the shell is new and the observation says so', async () => {
    const key = await stack.newUser('agent-shell');
    await stack.call('POST', '/api/settings', {
      key,
      body: { llm_model: 'm', llm_api_key: 'sk-shell', llm_base_url: llm.baseUrl },
    });
    llm.enqueue(
      reply.bash('mkdir -p deep && cd deep && export KEPT=yes'),
      reply.bash('echo "kept=[$KEPT]"; pwd'),
      reply.finish('first part'),
    );
    const task = await startConversation(
      stack,
      { initial_message: { content: [{ type: 'text', text: 'cd and export' }] } },
      key,
    );
    const cid = task.app_conversation_id;
    await waitForExecutionStatus(stack, cid, ['finished'], key);
    const bashOutputs = async () =>
      (await allEvents(stack, cid, key))
        .filter((e) => e.kind === 'ObservationEvent')
        .map((e) => (e as unknown as { observation: { output?: string; metadata?: { prefix?: string } } }).observation);
    const [, second] = await bashOutputs();
    expect(second!.output).toMatch(/^kept=\[yes\]\n.*\/deep$/);

    const sandboxId = task.sandbox_id!;
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key })).status).toBe(200);
    await waitFor('paused', async () => (await conversation(stack, cid, key))!.sandbox_status, {
      until: (s) => s === 'PAUSED',
      timeoutMs: 30_000,
    });
    llm.enqueue(reply.bash('echo "kept=[$KEPT]"; pwd'), reply.finish('second part'));
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key })).status).toBe(200);
    await waitFor('running again', async () => (await conversation(stack, cid, key))!.sandbox_status, {
      until: (s) => s === 'RUNNING',
      timeoutMs: 60_000,
    });
    expect(
      (
        await stack.call('POST', `/api/conversations/${cid}/events`, {
          key,
          body: { role: 'user', content: [{ type: 'text', text: 'again' }], run: true },
        })
      ).status,
    ).toBe(200);
    await waitFor('the command after the resume', bashOutputs, { until: (o) => o.length >= 5, timeoutMs: 60_000 });
    const after = (await bashOutputs())[3]!;
    expect(after.output).toMatch(/^kept=\[\]\n/);
    expect(after.output).not.toContain('/deep');
    expect(after.metadata!.prefix).toMatch(/paused and resumed/);
  });
});
