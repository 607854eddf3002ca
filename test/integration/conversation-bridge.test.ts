import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
let conversationId: string;
let sandboxId: string;
let sandboxKey: string;

const event = (i: number, id = randomUUID().replaceAll('-', '')) => ({
  kind: 'MessageEvent',
  id,
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  source: 'agent',
  llm_message: { role: 'assistant', content: [{ type: 'text', text: `message ${i}` }] },
});

beforeAll(async () => {
  // The key the start configuration is checked for.
  agent = await startAgentStack({ script: [reply.finish('ready')], settings: { llm_api_key: 'sk-w' } });
  ({ stack, llm } = agent);
  const task = await startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } });
  conversationId = task.app_conversation_id;
  sandboxId = task.sandbox_id!;
  await waitForExecutionStatus(stack, conversationId, ['finished']);
  expect((await stack.call('GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0].session_api_key).toBeNull();
  sandboxKey = (await stack.sandboxKey(sandboxId))!;
  expect(sandboxKey).toBeTypeOf('string');
});
afterAll(() => agent?.stop());

const count = async () =>
  (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${conversationId}`)).body as number;
/** Posts a batch numbered from `seq` (by default right after what the conversation holds). */
const post = async (
  events: unknown,
  key: string | null = sandboxKey,
  cid = conversationId,
  sid = sandboxId,
  seq?: number,
) =>
  stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${seq ?? (await count()) + 1}`, {
    key,
    body: events,
  });

describe('the events bridge route', () => {
  it('is idempotent by sequence number: a batch posted again (a retry, maybe grown) stores each event once, in order', async () => {
    const before = await count();
    const batch = [event(1), event(2), event(3)];
    expect((await post(batch, sandboxKey, conversationId, sandboxId, before + 1)).body).toEqual({
      success: true,
      added: 3,
    });
    expect((await post([...batch, event(4)], sandboxKey, conversationId, sandboxId, before + 1)).body).toEqual({
      success: true,
      added: 1,
    });
    expect(await count()).toBe(before + 4);
    const page = await stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${conversationId}&sort_order=TIMESTAMP_DESC&limit=4`,
    );
    expect(
      page.body.items.map((e: { llm_message: { content: { text: string }[] } }) => e.llm_message.content[0]!.text),
    ).toEqual(['message 4', 'message 3', 'message 2', 'message 1']);
  });

  it('stores events whatever numbers they hold, and bounds the metrics a sandbox reports', async () => {
    const odd = { ...event(7), extra: { tiny: 5e-324, huge: 1e300, big: Number.MAX_SAFE_INTEGER * 4 } };
    expect((await post([odd])).body).toEqual({ success: true, added: 1 });
    const page = await stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${conversationId}&sort_order=TIMESTAMP_DESC&limit=1`,
    );
    expect(page.body.items[0].extra).toEqual({ tiny: 5e-324, huge: 1e300, big: Number.MAX_SAFE_INTEGER * 4 });
    const report = (metrics: unknown) =>
      stack.call('POST', `/api/v1/webhooks/${sandboxId}/conversations`, {
        key: sandboxKey,
        body: { conversation_id: conversationId, metrics },
      });
    expect((await report({ accumulated_cost: 1e300 })).status).toBe(422);
    expect((await report({ prompt_tokens: 1.5 })).status).toBe(422);
    expect((await report({ accumulated_cost: 5e-324, prompt_tokens: 12 })).status).toBe(200);
    const [conv] = (await stack.call('GET', `/api/v1/app-conversations?ids=${conversationId}`)).body;
    expect(conv.metrics).toMatchObject({ accumulated_cost: 0, prompt_tokens: 12 });
  });

  it('refuses a wrong key, a user key, a foreign conversation and another sandbox id with 401', async () => {
    for (const res of [
      await post([event(9)], 'sbx_wrong'),
      await post([event(9)], null),
      await post([event(9)], stack.devKey),
      await post([event(9)], sandboxKey, randomUUID().replaceAll('-', '')),
      await post([event(9)], sandboxKey, conversationId, 'someothersandbox'),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
    }
    const report = await stack.call('POST', `/api/v1/webhooks/${sandboxId}/conversations`, {
      key: 'sbx_wrong',
      body: { conversation_id: conversationId, execution_status: 'error' },
    });
    expect(report.status).toBe(401);
    const config = await stack.call(
      'GET',
      `/api/v1/webhooks/${sandboxId}/conversations/${conversationId}/start-config`,
      { key: stack.devKey },
    );
    expect(config.status).toBe(401);
  });

  it('gives the sandbox its start configuration with the secrets it needs, and nobody else', async () => {
    const config = await stack.call(
      'GET',
      `/api/v1/webhooks/${sandboxId}/conversations/${conversationId}/start-config`,
      { key: sandboxKey },
    );
    expect(config.status).toBe(200);
    expect(config.body.llm).toEqual({ model: 'm', api_key: 'sk-w', base_url: llm.baseUrl });
  });

  it('validates events: 422 naming the bad member; a status report can only move a start task forward', async () => {
    const bad = await post([
      { ...event(5), source: 'martian' },
      { ...event(6), id: 'has spaces' },
    ]);
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: (string | number)[] }) => d.loc.slice(0, 3).join('.'))).toEqual([
      'body.0.source',
      'body.1.id',
    ]);
    const tooMany = await post(Array.from({ length: 101 }, (_, i) => event(i)));
    expect(tooMany.status).toBe(422);
    const back = await stack.call('POST', `/api/v1/webhooks/${sandboxId}/conversations`, {
      key: sandboxKey,
      body: { conversation_id: conversationId, start_task_status: 'PREPARING_REPOSITORY' },
    });
    expect(back.status).toBe(200);
    const [conv] = (await stack.call('GET', `/api/v1/app-conversations?ids=${conversationId}`)).body;
    const tasks = (
      await stack.call('GET', `/api/v1/app-conversations/start-tasks/search?conversation_id__eq=${conversationId}`)
    ).body.items;
    expect(conv.id).toBe(conversationId);
    expect(tasks[0].status).toBe('READY');
  });
});
