import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIVITY_WRITE_MS } from '#shared/conversations/bridge.ts';
import { MAX_SEQ_AHEAD } from '#shared/events/event-store.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

// The bridge route as a (possibly hostile) sandbox uses it, and the readers as a client follows them,
// over HTTP on the local stack with dynalite. The conversation is a real one, started by its agent.
let agent: AgentStack;
let stack: TestStack;
let cid: string;
let sid: string;
let key: string;
let userId: string;

beforeAll(async () => {
  agent = await startAgentStack({ script: [reply.finish('ready')] });
  stack = agent.stack;
  const task = await startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } });
  cid = task.app_conversation_id;
  sid = task.sandbox_id!;
  await waitForExecutionStatus(stack, cid, ['finished']);
  const [sandbox] = (await stack.call('GET', `/api/v1/sandboxes?id=${sid}`)).body;
  // The sandbox's own key: no response shows it.
  key = (await stack.sandboxKey(sid))!;
  userId = sandbox.created_by_user_id;
});
afterAll(() => agent?.stop());

let made = 0;
const ev = (kind = 'MessageEvent', text = `e${made + 1}`) => ({
  kind,
  id: `id-${++made}`,
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, made)).toISOString(),
  source: 'agent',
  text,
});
const texts = (items: { text?: string }[]) => items.map((e) => e.text);
const post = (seq: number | string, events: unknown[], k = key) =>
  stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${seq}`, { key: k, body: events });
const count = async (q = '') =>
  (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${cid}${q}`)).body as number;
const search = async (q: string) => {
  const res = await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}${q}`);
  expect(res.status, res.text).toBe(200);
  return res.body as { items: { text?: string }[]; next_page_id: string | null; follow_page_id?: string | null };
};
/** Every page from a cursor, following next_page_id. */
const drain = async (q: string, cursor: string | null) => {
  const seen: { text?: string }[] = [];
  let follow = cursor;
  for (let i = 0; i < 100; i++) {
    const page = await search(`${q}${cursor ? `&page_id=${encodeURIComponent(cursor)}` : ''}`);
    seen.push(...page.items);
    follow = page.follow_page_id ?? follow;
    if (!page.next_page_id) break;
    cursor = page.next_page_id;
  }
  return { seen, follow };
};
/** Writes one stored event item straight to the table, as one item of a BatchWriteItem landing on its own. */
const land = (seq: number, event: ReturnType<typeof ev>) =>
  documentClient().send(
    new PutCommand({
      TableName: tableName('events'),
      Item: {
        conversationKey: `${userId}#${cid}`,
        seq,
        kindKey: `${userId}#${cid}#${event.kind}`,
        timestamp: event.timestamp,
        event: JSON.stringify(event),
      },
    }),
  );

describe('events by sequence number', () => {
  it('refuses a sequence number that is negative, zero, not an integer or absurdly far ahead: 422 naming first_seq', async () => {
    const last = await count();
    for (const seq of ['-1', '0', '1.5', 'abc', '', String(last + 2 + MAX_SEQ_AHEAD)]) {
      const res = await post(seq, [ev()]);
      expect(res.status, seq).toBe(422);
      expect(res.body.detail[0].loc, seq).toEqual(['query', 'first_seq']);
    }
    expect((await stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}`, { key, body: [ev()] })).status).toBe(422);
    // Wrong key or another sandbox's conversation: 401 before any number is looked at.
    expect((await post(last + 1, [ev()], 'sbx_wrong')).status).toBe(401);
    expect(await count()).toBe(last);
  });

  it('stores a retried batch once, and never rewrites a committed event (a hostile sandbox cannot edit history)', async () => {
    const last = await count();
    const batch = [ev(), ev(), ev()];
    expect((await post(last + 1, batch)).body).toEqual({ success: true, added: 3 });
    expect((await post(last + 1, batch)).body).toEqual({ success: true, added: 0 });
    // The same numbers with other content: nothing changes.
    expect((await post(last + 3, [{ ...ev(), text: 'forged' }, ev()])).body).toEqual({ success: true, added: 1 });
    expect(await count()).toBe(last + 4);
    const page = await search(`&sort_order=TIMESTAMP_DESC&limit=4`);
    expect(texts(page.items).slice(1).reverse()).toEqual(texts(batch));
    expect(JSON.stringify(page.items)).not.toContain('forged');
  });

  it('readers stop at the first missing number; the count is the gap-free end and catches up when the gap fills', async () => {
    const last = await count();
    const start = (await search('&limit=100')).follow_page_id ?? null;
    const [a, b, c, d, e] = [ev(), ev(), ev(), ev(), ev()];
    // A batch ahead of a gap is stored but neither shown nor counted (nor `added`: nothing was committed).
    expect((await post(last + 3, [c, d])).body).toEqual({ success: true, added: 0 });
    expect(await count()).toBe(last);
    let followed = await drain('&limit=100', start);
    expect(followed.seen).toEqual([]);
    expect((await search('&sort_order=TIMESTAMP_DESC&limit=1')).items[0]!.text).not.toBe(d.text);
    // The gap fills: the counter is carried over the waiting batch too.
    expect((await post(last + 1, [a, b])).body).toEqual({ success: true, added: 2 });
    expect(await count()).toBe(last + 4);
    followed = await drain('&limit=100', followed.follow ?? start);
    expect(texts(followed.seen)).toEqual(texts([a, b, c, d]));
    // Items of one batch landing out of order (written straight to the table): the reader waits at the hole.
    await land(last + 6, e);
    let more = await drain('&limit=100', followed.follow!);
    expect(more.seen).toEqual([]);
    const f = ev();
    await land(last + 5, f);
    more = await drain('&limit=100', more.follow!);
    expect(texts(more.seen)).toEqual(texts([f, e]));
    // The count moves only when a post commits them (the sandbox's retry of that batch).
    expect(await count()).toBe(last + 4);
    expect((await post(last + 5, [f, e])).body).toEqual({ success: true, added: 2 });
    expect(await count()).toBe(last + 6);
  });

  it('a follower polling follow_page_id sees every event once, in order, whatever order the batches land in', async () => {
    const last = await count();
    let cursor = (await search('&limit=100')).follow_page_id!;
    const sent = Array.from({ length: 12 }, () => ev());
    const seen: { text?: string }[] = [];
    const poll = async () => {
      const { seen: s, follow } = await drain('&limit=5', cursor);
      seen.push(...s);
      cursor = follow!;
    };
    for (const [from, to] of [
      [4, 8],
      [0, 2],
      [8, 12],
      [2, 4],
    ] as const) {
      await post(last + 1 + from, sent.slice(from, to));
      await poll();
    }
    expect(texts(seen)).toEqual(texts(sent));
    expect(await count()).toBe(last + 12);
  });

  it('fills every page of a kind filter with a rare kind (no empty page while matches remain), counts it, and pages both ways', async () => {
    const last = await count();
    const batch = Array.from({ length: 60 }, (_, i) =>
      ev([3, 25, 58].includes(i) ? 'RareEvent' : 'MessageEvent', `k${i}`),
    );
    await post(last + 1, batch);
    const rare = texts(batch.filter((e) => e.kind === 'RareEvent'));
    const first = await search('&kind__eq=RareEvent&limit=1');
    expect(texts(first.items)).toEqual([rare[0]]);
    expect(first.next_page_id).not.toBeNull();
    const all = await drain('&kind__eq=RareEvent&limit=1', null);
    expect(texts(all.seen)).toEqual(rare);
    const down = await drain('&kind__eq=RareEvent&limit=2&sort_order=TIMESTAMP_DESC', null);
    expect(texts(down.seen).slice(0, 3)).toEqual([...rare].reverse());
    expect(await count('&kind__eq=RareEvent')).toBe(3);
    // Timestamp filters fill their pages too.
    const since = batch[50]!.timestamp;
    const window = `&timestamp__gte=${since}&timestamp__lt=${batch[54]!.timestamp}`;
    const recent = await search(`${window}&limit=3`);
    expect(texts(recent.items)).toEqual(texts(batch.slice(50, 53)));
    expect(recent.next_page_id).not.toBeNull();
    expect(texts((await drain(`${window}&limit=3`, null)).seen)).toEqual(texts(batch.slice(50, 54)));
    expect(await count(window)).toBe(4);
    expect(await count(`&kind__eq=RareEvent&timestamp__gte=${since}`)).toBe(1);
  });

  it('records the sandbox as active from a batch when its stored activity is older than ACTIVITY_WRITE_MS, not at every batch', async () => {
    const store = new DynamoSandboxStore();
    const rec = (await store.get(sid))!;
    const old = new Date(Date.now() - ACTIVITY_WRITE_MS - 5_000).toISOString();
    await store.update(sid, rec.version, { lastActivityAt: old });
    const activity = async () => (await store.get(sid))!.lastActivityAt;
    expect((await post((await count()) + 1, [ev()])).status).toBe(200);
    const touched = await activity();
    expect(touched > old).toBe(true);
    // Fresh now: the next batches leave the record alone.
    await new Promise((r) => setTimeout(r, 5));
    expect((await post((await count()) + 1, [ev()])).status).toBe(200);
    expect(await activity()).toBe(touched);
  });
});
