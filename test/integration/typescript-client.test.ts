import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError, RemoteConversation, RemoteWorkspace } from '@openhands/typescript-client';
import { ConversationClient, ServerClient } from '@openhands/typescript-client/clients';
import { conversation, startConversation } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

// The official TypeScript client (@openhands/typescript-client, the real package) pointed at a
// conversation's conversation_url with that conversation's session_api_key, as its docs show,
// against the local stack with a scripted LLM.
let agent: AgentStack;
let stack: TestStack;
let cid: string;
let other: string;
let scoped: string;
let otherScoped: string;
let host: string;

beforeAll(async () => {
  agent = await startAgentStack({
    script: [reply.finish('first answer'), reply.finish('other'), reply.finish('second answer')],
  });
  stack = agent.stack;
  const [a, b] = await Promise.all([
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
  ]);
  cid = a.app_conversation_id;
  other = b.app_conversation_id;
  for (const id of [cid, other])
    await waitFor('finished', () => conversation(stack, id), {
      until: (c) => c?.execution_status === 'finished',
      timeoutMs: 60_000,
    });
  const view = (await conversation(stack, cid))!;
  scoped = view.session_api_key!;
  otherScoped = (await conversation(stack, other))!.session_api_key!;
  // The client takes the host of conversation_url (the API's own origin here).
  host = new URL(view.conversation_url!).origin;
}, 150_000);
afterAll(() => agent?.stop());

const remote = (key = scoped, id = cid) =>
  new RemoteConversation(
    { kind: 'Agent', llm: { model: 'm' } } as never,
    new RemoteWorkspace({ host, workingDir: '/workspace/project', apiKey: key }),
    {
      conversationId: id,
    },
  );

describe('@openhands/typescript-client on conversation_url with the conversation key', () => {
  it('start() attaches to the conversation and its state reads the agent server ConversationInfo', async () => {
    const conv = remote();
    await conv.start();
    expect(await conv.state.getExecutionStatus()).toBe('finished');
    expect(((await conv.state.getAgent()) as any).llm.model).toBe('m');
    expect(((await conv.state.getWorkspace()) as any).working_dir).toBe('/workspace/project');
    expect(((await conv.state.getConfirmationPolicy()) as any).kind).toBe('NeverConfirm');
    const stats = (await conv.conversationStats()) as any;
    expect(stats.usage_to_metrics).toBeTypeOf('object');
    await conv.setTitle('renamed by the client');
    expect(((await conv.state.refresh()) as any).title).toBe('renamed by the client');
    // The owner's key without the client header keeps the legacy shape (the console reads it).
    const legacy = await stack.call('GET', `/api/conversations/${cid}`);
    expect(legacy.body.conversation_id).toBe(cid);
    expect(legacy.body.title).toBe('renamed by the client');
    const named = await stack.call('GET', `/api/conversations/${cid}`, {
      headers: { 'x-openhands-client': 'agent_canvas' },
    });
    expect(named.body.execution_status).toBe('finished');
  });

  it('events: search with the filters, count, get by id, and the final response', async () => {
    const conv = remote();
    const all = await conv.state.events.getEvents();
    expect(all.length).toBeGreaterThan(3);
    const count = await conv.state.events.count();
    expect(count).toBe(all.length);
    const messages = await conv.state.events.search({ kind: 'MessageEvent' });
    expect(messages.items.length).toBeGreaterThan(0);
    expect(messages.items.every((e: any) => e.kind === 'MessageEvent')).toBe(true);
    expect(await conv.state.events.count({ kind: 'MessageEvent' })).toBe(messages.items.length);
    const fromUser = await conv.state.events.search({ source: 'user' });
    expect(fromUser.items.every((e: any) => e.source === 'user')).toBe(true);
    const desc = await conv.state.events.search({ sort_order: 'TIMESTAMP_DESC', limit: 2 });
    expect(desc.items.map((e: any) => e.id)).toEqual(
      all
        .slice(-2)
        .reverse()
        .map((e: any) => e.id),
    );
    expect(desc.next_page_id).toBeTruthy();
    const second = all[1] as any;
    expect(await conv.state.events.getEventById(second.id)).toEqual(second);
    expect(await conv.state.events.getEventsById(['no-such-event'])).toEqual([null]);
    // Which of the two first replies this conversation got depends on which asked the scripted LLM first.
    expect(['first answer', 'other']).toContain(await conv.getAgentFinalResponse());
  });

  it('sendMessage + run reach the agent; pause answers; the server client connects', async () => {
    const conv = remote();
    await conv.sendMessage('a follow-up');
    await conv.run();
    await waitFor('the second answer', () => conv.getAgentFinalResponse(), {
      until: (r) => r.includes('second answer'),
      timeoutMs: 30_000,
    });
    await waitFor('finished', () => conv.state.refresh().then((i: any) => i.execution_status), {
      until: (s) => s === 'finished',
      timeoutMs: 30_000,
    });
    await conv.pause();
    const server = new ServerClient({ host, apiKey: scoped });
    expect(await server.getAlive()).toMatchObject({ status: 'ok' });
    expect((await server.getServerInfo()).version).toMatch(/^1\.\d+\.\d+$/);
    const conversations = new ConversationClient({ host, apiKey: scoped });
    await conversations.interruptConversation(cid);
  }, 60_000);

  it("a conversation key reaches nothing else: another conversation, the list, the settings, another user's", async () => {
    const refused = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(HttpError);
      return (err as HttpError).status;
    };
    expect(await refused(remote(scoped, other).start())).toBe(403);
    expect(await refused(remote(scoped, other).state.events.search())).toBe(403);
    expect(await refused(remote(scoped, other).setTitle('hijacked'))).toBe(403);
    expect(await refused(new ConversationClient({ host, apiKey: scoped }).getConversation(other))).toBe(403);
    for (const path of ['/api/v1/app-conversations/search', '/api/keys', '/api/v1/users/me'])
      expect((await stack.call('GET', path, { key: scoped })).status, path).toBe(403);
    // The owner's list: a conversation key lists only by ids (the agent server's batch get), its own conversation only.
    expect((await stack.call('GET', '/api/conversations', { key: scoped })).status).toBe(422);
    expect((await stack.call('GET', `/api/conversations?ids=${other}`, { key: scoped })).body).toEqual([null]);
    expect((await stack.call('DELETE', `/api/conversations/${cid}`, { key: scoped })).status).toBe(403);
    expect((await stack.call('GET', `/api/conversations/${other}/events/search`, { key: otherScoped })).status).toBe(
      200,
    );
    // Another user's key on this conversation: 404, as any foreign id.
    const bob = await stack.newUser('bob-ts-client');
    expect(await refused(remote(bob).start())).toBe(404);
    expect(await refused(remote(bob).state.events.getEventById('x'))).toBe(404);
    expect((await stack.call('GET', `/api/conversations/${cid}/agent_final_response`, { key: bob })).status).toBe(404);
    // Bad input: a clear 4xx naming the field.
    const bad = await stack.call('GET', `/api/conversations/${cid}/events/search?source=alien`, { key: scoped });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('source');
    const badCount = await stack.call('GET', `/api/conversations/${cid}/events/count?body=x`, { key: scoped });
    expect(badCount.status).toBe(422);
    expect(badCount.text).toContain('body');
  });
});

describe("Agent Canvas cloud mode's load-time calls", () => {
  it("GET /api/keys/current names the key (never the key itself), or the session; /api/organizations is the caller's", async () => {
    const orgId = (await stack.call('GET', '/api/v1/users/me')).body.org_id as string;
    expect(orgId).toMatch(/^org_/);
    const mine = await stack.call('GET', '/api/keys/current');
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ name: expect.any(String), auth_type: 'api_key', user_id: 'dev', org_id: orgId });
    expect(mine.body.id).toMatch(/^[0-9a-f]{16}$/);
    expect(mine.text).not.toContain(stack.devKey);
    const signIn = await stack.call('POST', '/api/authenticate');
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const bySession = await stack.call('GET', '/api/keys/current', {
      key: null,
      headers: { cookie, origin: stack.url },
    });
    expect(bySession.body).toEqual({ id: null, name: 'session', org_id: orgId, user_id: 'dev', auth_type: 'session' });
    const orgs = await stack.call('GET', '/api/organizations');
    expect(orgs.body).toMatchObject({ items: [{ id: orgId }], current_org_id: orgId });
    // Without credentials, or with a conversation key: refused.
    expect((await stack.call('GET', '/api/keys/current', { key: null })).status).toBe(401);
    expect((await stack.call('GET', '/api/keys/current', { key: scoped })).status).toBe(403);
    expect((await stack.call('GET', '/api/organizations', { key: scoped })).status).toBe(403);
    const bob = await stack.newUser('bob-canvas');
    const bobs = (await stack.call('GET', '/api/organizations', { key: bob })).body.current_org_id;
    expect(bobs).toMatch(/^org_/);
    expect(bobs).not.toBe(orgId);
  });
});
