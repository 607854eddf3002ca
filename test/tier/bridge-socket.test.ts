import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { createKey, sandboxOf, settingsRoundTrip, startConversationV1, startSandbox, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';

/**
 * The bridge socket on the synthesized stack: the sandbox task (the real program, with the
 * BRIDGE_SOCKET_URL of its task definition) connects to the emulated WebSocket API with its own key,
 * `$connect` runs the real bundle, and a command queued by the user API reaches the program through
 * PostToConnection from the route's bundle, checked against that function's role, with no
 * long-poll running.
 */
describe('commands over the bridge socket on the synthesized stack', () => {
  let tier: TierStack;
  let llm: ScriptedLlm;
  let key: string;
  let conversationId: string; // the first test's, its sandbox on the socket
  const commandFetches = (sandboxId: string) =>
    tier.api.records.filter((r) => r.path === `/api/v1/sandboxes/${sandboxId}/bridge/commands`).length;
  const openConnections = () => [...tier.bridgeSocket.connections.values()].filter((c) => c.open).length;

  beforeAll(async () => {
    [tier, llm] = await Promise.all([startTier(), startScriptedLlm()]);
    key = await createKey(tier, 'socketeer');
    await settingsRoundTrip(tier, key, llm.baseUrl);
  }, 240_000);
  afterAll(async () => {
    await tier?.stop();
    await llm?.close();
  });

  it('a command from the user API reaches the sandbox by push: no fetch, no long-poll, no denial', async () => {
    llm.enqueue(reply.finish('first answer'));
    ({ conversationId } = await startConversationV1(tier, key, 'hello socket'));
    const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    await until(
      tier,
      'the sandbox on the bridge socket',
      async () => openConnections(),
      (n) => n >= 1,
    );
    expect(tier.bridgeSocket.records.filter((r) => r.routeKey === '$connect').map((r) => r.status)).toContain(200);
    const before = commandFetches(c.sandbox_id);
    llm.enqueue(reply.finish('pushed and answered'));
    const sent = await tier.call('POST', `/api/conversations/${conversationId}/events`, {
      key,
      body: { role: 'user', content: [{ type: 'text', text: 'one more' }], run: true },
    });
    expect(sent.status, sent.text).toBe(200);
    await until(
      tier,
      'the agent answered the pushed message',
      async () =>
        (await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${conversationId}&limit=100`, { key })).body
          .items as any[],
      (items) => items.some((e) => JSON.stringify(e).includes('pushed and answered')),
      90_000,
    );
    // The command came over the socket: the program made no HTTP call for it.
    expect(commandFetches(c.sandbox_id)).toBe(before);
    expect(tier.aws.denials).toEqual([]);
  }, 240_000);

  it('workspace reads: a command pushed to the task, its reply through the reply bundle; paused, the snapshot read with GetObject only', async () => {
    const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    const task = [...tier.aws.tasks.values()].find(
      (t) => t.startedBy === c.sandbox_id && t.desiredStatus === 'RUNNING',
    )!;
    // The workspace is the task's own disk: only the program inside can read it.
    writeFileSync(join(tier.aws.taskPath(task.taskArn, '/workspace'), 'tier.txt'), 'from the task\n');
    const before = commandFetches(c.sandbox_id);
    const listed = await tier.call('GET', `/api/v1/app-conversations/${conversationId}/files?path=/workspace/project`, {
      key,
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toContain('tier.txt');
    const read = await tier.call('GET', `/api/v1/app-conversations/${conversationId}/file?file_path=tier.txt`, { key });
    expect(read.text).toBe('from the task\n');
    expect(read.headers.get('content-type')).toContain('text/plain');
    // Pushed over the socket (no fetch of the queue), answered on the reply route's bundle.
    expect(commandFetches(c.sandbox_id)).toBe(before);
    const replies = tier.api.records.filter(
      (r) => r.routeKey === 'POST /api/v1/sandboxes/{sandbox_id}/bridge/commands/{seq}/reply',
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200]);
    // Paused: the task is gone, its workspace is the snapshot the pause saved.
    expect((await tier.call('POST', `/api/v1/sandboxes/${c.sandbox_id}/pause`, { key })).status).toBe(200);
    expect((await sandboxOf(tier, key, c.sandbox_id))?.status).toBe('PAUSED');
    // 409 until the stopping task's snapshot is complete, then the file from it.
    const paused = await until(
      tier,
      "the paused sandbox's file from its snapshot",
      () =>
        tier.call('GET', `/api/v1/app-conversations/${conversationId}/file?file_path=/workspace/project/tier.txt`, {
          key,
        }),
      (res) => res.status !== 409,
    );
    expect(paused.status, paused.text).toBe(200);
    expect(paused.text).toBe('from the task\n');
    expect((await tier.call('GET', `/api/v1/app-conversations/${conversationId}/git/changes`, { key })).status).toBe(
      409,
    );
    const roleOf = (id: string) => tier.lambda.byName(id).roleArn;
    expect(tier.aws.calls).toContainEqual({
      principal: roleOf('workspaceFile'),
      operation: 's3:GetObject',
      allowed: true,
    });
    expect(tier.aws.denials).toEqual([]);
  }, 120_000);

  it("refuses another sandbox's key, a user key and no key; a sandbox's own key connects", async () => {
    const a = await startSandbox(tier, key);
    const b = await startSandbox(tier, key);
    const keyB = (await tier.sandboxKey(b.id))!;
    const keyA = (await tier.sandboxKey(a.id))!;
    const attempt = (sandboxId: string, headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${tier.bridgeSocket.url}/${tier.bridgeSocket.stage}?sandbox_id=${sandboxId}`, {
          headers,
        });
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('error', () => resolve(0));
      });
    expect(await attempt(a.id, { 'x-session-api-key': keyB })).toBe(401);
    expect(await attempt(a.id, { 'x-session-api-key': key })).toBe(401);
    expect(await attempt(a.id, {})).toBe(401);
    expect(await attempt(a.id, { 'x-session-api-key': keyA })).toBe(101);
  }, 240_000);
});
