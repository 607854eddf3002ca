import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, conversation, startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack, type SettingsBody } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;

beforeAll(async () => {
  agent = await startAgentStack({ settings: null });
  ({ stack, llm } = agent);
});
afterAll(() => agent?.stop());

/** A user with their own settings (so confirmation mode or limits stay within one test). */
async function user(name: string, settings: SettingsBody = {}): Promise<string> {
  const key = await stack.newUser(name);
  await agent.saveSettings(settings, key);
  return key;
}
const message = (text: string, run = true) => ({ initial_message: { content: [{ type: 'text', text }], run } });
const workspaceOf = (sandboxId: string) => join(stack.dataDir, 'sandboxes', sandboxId, 'workspace');

describe('talking to a running conversation', () => {
  it('confirmation mode: waits, then runs an accepted action and does not run a rejected one', async () => {
    const key = await user('confirmer', { confirmation_mode: true });
    llm.enqueue(reply.bash('echo accepted > accepted.txt'));
    const task = await startConversation(stack, message('make accepted.txt'), key);
    const id = task.app_conversation_id;
    await waitForExecutionStatus(stack, id, ['waiting_for_confirmation'], key);
    llm.enqueue(reply.bash('echo rejected > rejected.txt'));
    expect(
      (
        await stack.call('POST', `/api/conversations/${id}/events/respond_to_confirmation`, {
          key,
          body: { accept: true },
        })
      ).body,
    ).toEqual({ success: true });
    await waitFor('second action', () => allEvents(stack, id, key), {
      until: (ev) => ev.filter((e) => e.kind === 'ActionEvent').length >= 2,
      timeoutMs: 30_000,
    });
    await waitForExecutionStatus(stack, id, ['waiting_for_confirmation'], key);
    llm.enqueue(reply.finish('ok, not doing that'));
    await stack.call('POST', `/api/conversations/${id}/events/respond_to_confirmation`, {
      key,
      body: { accept: false, reason: 'not that file' },
    });
    await waitForExecutionStatus(stack, id, ['finished'], key);
    const ws = workspaceOf(task.sandbox_id!);
    expect(readFileSync(join(ws, 'accepted.txt'), 'utf8').trim()).toBe('accepted');
    expect(() => readFileSync(join(ws, 'rejected.txt'))).toThrow();
    const events = await allEvents(stack, id, key);
    expect(events.some((e) => e.kind === 'UserRejectObservation' && JSON.stringify(e).includes('not that file'))).toBe(
      true,
    );
  });

  it('max_iterations stops the loop with a message saying so', async () => {
    const key = await user('iterations', { max_iterations: 2 });
    // Two model calls are allowed: a third step would never be asked for.
    llm.enqueue(reply.bash('echo 1'), reply.bash('echo 2'));
    const task = await startConversation(stack, message('loop'), key);
    const conv = await waitForExecutionStatus(stack, task.app_conversation_id, ['error', 'finished', 'stuck'], key);
    expect(conv.execution_status).toBe('error');
    const events = JSON.stringify(await allEvents(stack, task.app_conversation_id, key));
    expect(events).toContain('MaxIterationsReached');
    expect(llm.remaining).toBe(0);
  });

  it('max_budget_per_task stops the loop once the cost reaches it', async () => {
    const key = await user('budget', { max_budget_per_task: 0.000001, llm_model: 'openai/gpt-4o' });
    // The first call already costs more than the budget: no second call is made.
    llm.enqueue({
      toolCalls: [{ name: 'execute_bash', args: { command: 'echo spend' } }],
      usage: { prompt_tokens: 100_000, completion_tokens: 1000 },
    });
    const task = await startConversation(stack, message('spend'), key);
    const conv = await waitForExecutionStatus(stack, task.app_conversation_id, ['error', 'finished'], key);
    expect(conv.execution_status).toBe('error');
    expect(conv.metrics!.accumulated_cost).toBeGreaterThan(0);
    expect(JSON.stringify(await allEvents(stack, task.app_conversation_id, key))).toContain('MaxBudgetReached');
    expect(llm.remaining).toBe(0);
  });

  it('an LLM that is down becomes an AgentErrorEvent and status error, not a hung conversation', async () => {
    const key = await user('llmdown', { llm_base_url: 'http://127.0.0.1:9/v1' });
    const task = await startConversation(stack, message('anyone there?'), key);
    expect(task.status).toBe('READY');
    const conv = await waitForExecutionStatus(stack, task.app_conversation_id, ['error'], key, 90_000);
    expect(conv.execution_status).toBe('error');
    const events = await allEvents(stack, task.app_conversation_id, key);
    expect(events.some((e) => e.kind === 'AgentErrorEvent' || e.kind === 'ConversationErrorEvent')).toBe(true);
  });

  it('survives a pause and resume of its sandbox: the workspace is intact and the conversation continues', async () => {
    const key = await user('pauser');
    llm.enqueue(reply.bash('echo before-pause > kept.txt'), reply.finish('first part done'));
    const task = await startConversation(stack, message('write kept.txt'), key);
    const id = task.app_conversation_id;
    await waitForExecutionStatus(stack, id, ['finished'], key);
    const sandboxId = task.sandbox_id!;
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key })).status).toBe(200);
    await waitFor('paused', async () => (await conversation(stack, id, key))!.sandbox_status, {
      until: (s) => s === 'PAUSED',
      timeoutMs: 30_000,
    });
    expect(readFileSync(join(workspaceOf(sandboxId), 'kept.txt'), 'utf8').trim()).toBe('before-pause');

    // A message sent while paused waits in the queue and is delivered after the resume.
    llm.enqueue(reply.bash('cat kept.txt && echo after-resume >> kept.txt'), reply.finish('continued'));
    expect(
      (
        await stack.call('POST', `/api/conversations/${id}/events`, {
          key,
          body: { role: 'user', content: [{ type: 'text', text: 'carry on' }], run: true },
        })
      ).status,
    ).toBe(200);
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key })).status).toBe(200);
    await waitFor('the agent to continue after the resume', () => allEvents(stack, id, key), {
      until: (ev) =>
        ev.some(
          (e) =>
            e.kind === 'ObservationEvent' &&
            JSON.stringify(e).includes('before-pause') &&
            JSON.stringify(e).includes('cat kept'),
        ) || ev.filter((e) => e.kind === 'ActionEvent').length >= 4,
      timeoutMs: 60_000,
    });
    await waitForExecutionStatus(stack, id, ['finished'], key);
    expect(readFileSync(join(workspaceOf(sandboxId), 'kept.txt'), 'utf8')).toBe('before-pause\nafter-resume\n');
    // The resumed sandbox numbered its events after the ones before the pause: all shown, all counted, none twice.
    const after = await allEvents(stack, id, key);
    expect((await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key })).body).toBe(
      after.length,
    );
    expect(new Set(after.map((e) => e.id)).size).toBe(after.length);
    // The model saw the history from before the pause.
    expect(JSON.stringify(llm.requests.at(-1)!.body)).toContain('write kept.txt');
  });

  it('a client following by cursor sees every event once, in order', async () => {
    const key = await user('follower');
    llm.enqueue(reply.bash('echo a'), reply.bash('echo b'), reply.bash('echo c'), reply.finish('end'));
    const res = await stack.call('POST', '/api/v1/app-conversations', { key, body: message('go') });
    const taskId = res.body.id;
    const conversationId = await waitFor(
      'condition',
      async () =>
        (await stack.call('GET', `/api/v1/app-conversations/start-tasks?ids=${taskId}`, { key })).body[0]
          .app_conversation_id as string,
      { until: (c) => Boolean(c), timeoutMs: 60_000 },
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    // Each read takes the next page; done once the conversation has finished and a page comes back empty.
    await waitFor(
      'the cursor to reach the end of the finished conversation',
      async () => {
        const page: any = await stack.call(
          'GET',
          `/api/v1/events/search?conversation_id__eq=${conversationId}&limit=3${cursor ? `&page_id=${encodeURIComponent(cursor)}` : ''}`,
          { key },
        );
        seen.push(...page.body.items.map((e: { id: string }) => e.id));
        cursor = page.body.next_page_id ?? page.body.follow_page_id ?? cursor;
        return (
          (await conversation(stack, conversationId, key))!.execution_status === 'finished' &&
          !page.body.next_page_id &&
          page.body.items.length === 0
        );
      },
      { until: (done) => done, timeoutMs: 60_000 },
    );
    const all = (await allEvents(stack, conversationId, key)).map((e) => e.id);
    expect(seen).toEqual(all);
    const desc = await stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${conversationId}&sort_order=TIMESTAMP_DESC&limit=100`,
      { key },
    );
    expect(desc.body.items.map((e: { id: string }) => e.id)).toEqual([...all].reverse());
  });
});
