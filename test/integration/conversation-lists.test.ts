import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import { ConversationLimitError } from '#shared/conversations/conversation-store.ts';
import { COUNTER_ID, DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { conversationRecord } from '#test/helpers/conversations.ts';

let dynamo: EmbeddedDynamo;

beforeAll(async () => {
  dynamo = await startDynalite();
  useLocalTables(dynamo.endpoint, 'conversation-count');
  await createTables(dynamo.endpoint, 'conversation-count');
});
afterAll(() => dynamo.close());

let n = 0;
const newId = () => (++n).toString(16).padStart(32, '0');
const record = (
  userId: string,
  id = newId(),
  createdAt = new Date(Date.parse('2026-01-01T00:00:00Z') + n * 1000).toISOString(),
): ConversationRecord =>
  conversationRecord(userId, { id, createdAt, updatedAt: createdAt, start_task_id: '', title: `Conversation ${id}` });

/** Every conversation of the user, through the list (all pages). */
async function listAll(store: DynamoConversationStore, userId: string): Promise<ConversationRecord[]> {
  const out: ConversationRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await store.list(userId, {}, 7, startKey);
    out.push(...page.items);
    startKey = page.lastKey;
  } while (startKey);
  return out;
}

const counterItem = async (userId: string) =>
  (
    await documentClient().send(
      new GetCommand({ TableName: tableName('conversations'), Key: { userId, id: COUNTER_ID }, ConsistentRead: true }),
    )
  ).Item;

/**
 * Loses the answer of the next write that `matches`: the write is applied by dynalite, then the SDK
 * sees a time-out instead of its answer and retries, as it does when a response is lost on the way.
 */
function loseNextAnswer(matches: (target: string, body: string) => boolean): { lost: () => number } {
  let lost = 0;
  let armed = true;
  const name = `lose-answer-${Math.random()}`;
  const middleware = (next: (args: Sent) => Promise<unknown>) => async (args: Sent) => {
    const out = await next(args);
    if (armed && matches(String(args.request.headers['x-amz-target']), bodyText(args.request.body))) {
      armed = false;
      lost++;
      throw Object.assign(new Error('the answer was lost'), { name: 'TimeoutError', $metadata: {} });
    }
    return out;
  };
  // Inside the SDK's retry loop, so its retry sees the loss.
  documentClient().middlewareStack.addRelativeTo(middleware as Parameters<Stack['addRelativeTo']>[0], {
    name,
    relation: 'after',
    toMiddleware: 'retryMiddleware',
  });
  cleanups.push(() => documentClient().middlewareStack.remove(name));
  return { lost: () => lost };
}
type Stack = ReturnType<typeof documentClient>['middlewareStack'];
interface Sent {
  input: unknown;
  request: { headers: Record<string, string>; body: unknown };
}
const cleanups: (() => void)[] = [];
const bodyText = (body: unknown) => (typeof body === 'string' ? body : new TextDecoder().decode(body as Uint8Array));
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('the per-user conversation count', () => {
  it('equals the list after parallel creates and deletes, and stays O(1) (one item)', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-parallel';
    const records = Array.from({ length: 60 }, () => record(user));
    await Promise.all(records.map((r) => store.create(r)));
    const doomed = records.filter((_, i) => i % 3 === 0);
    // Creates and deletes racing each other: 20 more creates while 20 deletes (each deleted twice at once) run.
    const more = Array.from({ length: 20 }, () => record(user));
    await Promise.all([
      ...more.map((r) => store.create(r)),
      ...doomed.flatMap((r) => [store.delete(user, r.id), store.delete(user, r.id)]),
    ]);
    const listed = await listAll(store, user);
    expect(listed).toHaveLength(60);
    expect(await store.count(user, {})).toBe(60);
    // The filtered count reads the index and agrees.
    expect(await store.count(user, { createdGte: '2000-01-01T00:00:00Z' })).toBe(60);
  });

  it('is not moved by a create of a taken id or a delete of an id that is gone or never was', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-taken';
    const r = record(user);
    expect(await store.create(r)).toBe(true);
    expect(await store.create({ ...r, title: 'again' })).toBe(false);
    expect(await store.count(user, {})).toBe(1);
    await store.delete(user, r.id);
    await store.delete(user, r.id);
    await store.delete(user, newId());
    expect(await store.count(user, {})).toBe(0);
    // The deleted id stays taken: a create under it is refused and not counted.
    expect(await store.create({ ...r, version: 1 })).toBe(false);
    expect(await store.count(user, {})).toBe(0);
  });

  it('counts a create once when the answer of its counter write is lost and the SDK retries it', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-lost-counter';
    const lose = loseNextAnswer(
      (target, body) => target.endsWith('UpdateItem') && body.includes(COUNTER_ID) && body.includes(user),
    );
    expect(await store.create(record(user))).toBe(true);
    expect(lose.lost()).toBe(1);
    expect(await store.count(user, {})).toBe(1);
  });

  it('counts a create once, and reports it created, when the answer of its put is lost', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-lost-put';
    const r = record(user);
    const lose = loseNextAnswer((target, body) => target.endsWith('PutItem') && body.includes(r.id));
    // The retried put finds the id taken: by this very create, so it is not a conflict.
    expect(await store.create(r)).toBe(true);
    expect(lose.lost()).toBe(1);
    expect(await store.count(user, {})).toBe(1);
    expect((await store.get(user, r.id))?.title).toBe(r.title);
  });

  it('counts a delete once when the answer of its tombstone put is lost', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-lost-delete';
    const [a, b] = [record(user), record(user)];
    await store.create(a);
    await store.create(b);
    const lose = loseNextAnswer(
      (target, body) => target.endsWith('PutItem') && body.includes('deletedAt') && body.includes(a.id),
    );
    await store.delete(user, a.id);
    expect(lose.lost()).toBe(1);
    expect(await store.count(user, {})).toBe(1);
    expect(await store.get(user, a.id)).toBeUndefined();
  });

  it("keeps one user's count apart from another's, even under the same conversation id", async () => {
    const store = new DynamoConversationStore();
    const [alice, mallory] = ['count-alice', 'count-mallory'];
    const r = record(alice);
    await store.create(r);
    await store.create(record(alice));
    // Mallory takes Alice's id for herself, then deletes it, and tries to delete Alice's.
    expect(await store.create({ ...r, userId: mallory })).toBe(true);
    await store.delete(mallory, r.id);
    await store.delete(mallory, r.id);
    expect(await store.count(alice, {})).toBe(2);
    expect(await store.count(mallory, {})).toBe(0);
  });

  it('takes in the conversations stored before the counter existed, once, at the first change after it', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-before';
    // Three conversations as an earlier version stored them: no counter, no `counted` mark.
    const old = [record(user), record(user), record(user)];
    for (const r of old)
      await documentClient().send(new PutCommand({ TableName: tableName('conversations'), Item: r }));
    expect(await store.count(user, {})).toBe(3);
    expect(await counterItem(user)).toBeUndefined();
    // An old one deleted before the counter starts (its answer lost, so the retry must read what it
    // ended): out of the index, and nothing to count down yet.
    const lose = loseNextAnswer(
      (target, body) => target.endsWith('PutItem') && body.includes('deletedAt') && body.includes(old[0]!.id),
    );
    await store.delete(user, old[0]!.id);
    expect(lose.lost()).toBe(1);
    expect(await store.count(user, {})).toBe(2);
    const fresh = [record(user), record(user)];
    await Promise.all(fresh.map((r) => store.create(r)));
    expect((await counterItem(user))?.started).toBe(true);
    expect(await store.count(user, {})).toBe(4);
    await store.delete(user, old[1]!.id);
    await store.delete(user, fresh[0]!.id);
    await store.delete(user, fresh[0]!.id);
    expect(await store.count(user, {})).toBe(2);
    expect(await listAll(store, user)).toHaveLength(2);
    expect((await counterItem(user))?.conversations).toBe(2);
  });

  it('never shows the counter item as a conversation', async () => {
    const store = new DynamoConversationStore();
    const user = 'count-hidden';
    await store.create(record(user));
    expect(await counterItem(user)).toBeDefined();
    expect(await store.get(user, COUNTER_ID)).toBeUndefined();
    expect((await store.getMany(user, [COUNTER_ID])).size).toBe(0);
    expect(await listAll(store, user)).toHaveLength(1);
  });

  it('remembers ops for at least a minute and keeps only about three minutes of them', async () => {
    let now = Date.parse('2026-02-01T10:00:30Z');
    const store = new DynamoConversationStore(() => now);
    const user = 'count-rotation';
    for (let minute = 0; minute < 6; minute++) {
      await store.create(record(user));
      now += 60_000;
    }
    const item = (await counterItem(user))!;
    expect(item.conversations).toBe(6);
    const remembered = [item.ops0, item.ops1, item.ops2].filter(Boolean).reduce((k, s: Set<string>) => k + s.size, 0);
    // The ops of the last two minutes (the set of two minutes ago is emptied by each write).
    expect(remembered).toBe(2);
  });
});

describe("the plan's max_conversations, held by the count", () => {
  const refused = (p: Promise<boolean>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('lets exactly the limit in when 20 creates race, and a delete frees one slot', async () => {
    const store = new DynamoConversationStore();
    const user = 'limit-race';
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => refused(store.create(record(user), 5))));
    const errors = outcomes.filter((o) => o !== undefined);
    expect(errors).toHaveLength(15);
    for (const e of errors) expect(e).toMatchObject({ name: 'Error', limit: 5, used: 5 });
    expect(errors[0]).toBeInstanceOf(ConversationLimitError);
    const listed = await listAll(store, user);
    expect(listed).toHaveLength(5);
    expect(await store.count(user, {})).toBe(5);
    await store.delete(user, listed[0]!.id);
    expect(await store.create(record(user), 5)).toBe(true);
    expect(await refused(store.create(record(user), 5))).toBeInstanceOf(ConversationLimitError);
    expect(await store.count(user, {})).toBe(5);
  });

  it('gives the slot back when the id is taken, and a taken id never counts twice', async () => {
    const store = new DynamoConversationStore();
    const user = 'limit-taken';
    const r = record(user);
    expect(await store.create(r, 2)).toBe(true);
    expect(await store.create({ ...r, title: 'again' }, 2)).toBe(false);
    expect(await store.create({ ...r, title: 'and again' }, 2)).toBe(false);
    expect(await store.count(user, {})).toBe(1);
    expect(await store.create(record(user), 2)).toBe(true);
    expect(await refused(store.create(record(user), 2))).toBeInstanceOf(ConversationLimitError);
  });

  it('counts a create once when the answer of its slot write is lost and the SDK retries it', async () => {
    const store = new DynamoConversationStore();
    const user = 'limit-lost';
    const lose = loseNextAnswer(
      (target, body) => target.endsWith('UpdateItem') && body.includes(COUNTER_ID) && body.includes(user),
    );
    expect(await store.create(record(user), 1)).toBe(true);
    expect(lose.lost()).toBe(1);
    expect(await store.count(user, {})).toBe(1);
    expect(await refused(store.create(record(user), 1))).toBeInstanceOf(ConversationLimitError);
  });
});

describe('filtered conversation pages', () => {
  it('are full while matches remain, however far apart the matches are, and page on to the last one', async () => {
    const store = new DynamoConversationStore();
    const user = 'pages-filtered';
    // 500 conversations, one in 100 titled "needle": more than one Query round apart.
    const records = Array.from({ length: 500 }, (_, i) => ({
      ...record(user),
      ...(i % 100 === 7 ? { title: `The needle ${i}` } : {}),
    }));
    for (let i = 0; i < records.length; i += 50)
      await Promise.all(records.slice(i, i + 50).map((r) => store.create(r)));
    const pages: string[][] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await store.list(user, { titleContains: 'NEEDLE' }, 2, startKey);
      pages.push(page.items.map((c) => c.title!));
      startKey = page.lastKey;
    } while (startKey && pages.length < 10);
    expect(pages).toEqual([
      ['The needle 407', 'The needle 307'],
      ['The needle 207', 'The needle 107'],
      ['The needle 7'],
    ]);
    expect(await store.count(user, { titleContains: 'needle' })).toBe(5);
    // Unfiltered pages are one Query of the page's limit, as before.
    const first = await store.list(user, {}, 3);
    expect(first.items).toHaveLength(3);
    expect((await store.list(user, {}, 3, first.lastKey)).items[0]!.id).not.toBe(first.items[2]!.id);
  });
});
