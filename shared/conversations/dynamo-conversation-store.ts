import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, paginateQuery, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  ConversationCounter,
  ConversationFilter,
  ConversationStore,
  StartTaskStore,
} from '#shared/conversations/conversation-store.ts';
import { ConversationLimitError } from '#shared/conversations/conversation-store.ts';
import type { ConversationRecord, StartTaskRecord } from '#shared/conversations/model.ts';
import type { StartTaskStatus } from '#shared/protocol.ts';
import { conditionalReturn, conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { batchGet, filterExpression, queryCount, queryFilled, queryPage, type Page } from '#shared/store/query.ts';

function userQuery(table: string, userId: string, f: ConversationFilter) {
  // created_at is the index's sort key, so its bounds are key conditions, not filters.
  const key = ['userId = :u'];
  const values: Record<string, unknown> = { ':u': userId };
  if (f.createdGte && f.createdLt) {
    key.push('createdAt BETWEEN :cg AND :clt');
    values[':cg'] = f.createdGte;
    values[':clt'] = f.createdLt;
  } else if (f.createdGte) {
    key.push('createdAt >= :cg');
    values[':cg'] = f.createdGte;
  } else if (f.createdLt) {
    key.push('createdAt < :clt');
    values[':clt'] = f.createdLt;
  }
  const filters = filterExpression([
    ['titleLower', 'contains', ':t', f.titleContains?.toLowerCase()],
    ['updatedAt', '>=', ':ug', f.updatedGte],
    ['updatedAt', '<', ':ult', f.updatedLt],
    ['selected_repository', '=', ':repo', f.repository],
    ['trigger', '=', ':trig', f.trigger],
    // BETWEEN includes its upper bound; the API's __lt does not.
    ['createdAt', '<', ':clt2', f.createdGte && f.createdLt ? f.createdLt : undefined],
  ]);
  return {
    TableName: table,
    IndexName: 'byUser',
    KeyConditionExpression: key.join(' AND '),
    ...filters,
    ExpressionAttributeValues: { ...values, ...filters.ExpressionAttributeValues },
  };
}

/**
 * The sort key of a user's counter item, beside their conversations: no conversation id (32 hex
 * characters) can equal it, and it has no createdAt, so the byUser index never holds it.
 */
export const COUNTER_ID = '#count';
/** The value of `counterShard` on counter items: their one partition of index `counters`. */
const COUNTERS = 'conversations';

/** The counter remembers its ops in three sets, one per minute in turn; see `countOnce`. */
const OP_SETS = 3;

/** The key attributes of a `byUser` item (the table's and the index's): a page's LastEvaluatedKey. */
const BY_USER_KEY = ['userId', 'id', 'createdAt'] as const;

/** A conversation is an item with createdAt: tombstones and the counter item have none. */
const isConversation = (
  item: Record<string, unknown> | undefined,
): item is ConversationRecord & Record<string, unknown> =>
  !!item && typeof item.createdAt === 'string' && !item.deletedAt;

const hasFilter = (f: ConversationFilter) => Object.values(f).some((v) => v !== undefined);

export class DynamoConversationStore implements ConversationStore {
  private readonly db = documentClient();
  private readonly table = tableName('conversations');

  constructor(private readonly now: () => number = Date.now) {}

  async create(record: ConversationRecord, maxConversations?: number): Promise<boolean> {
    // With a limit the slot is taken before the put (a crash between them counts one conversation too
    // many, on the limit's safe side); without one the put comes first, as it always did.
    const reserved = maxConversations === undefined ? undefined : await this.reserve(record, maxConversations);
    const writeToken = randomUUID();
    const put = () =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          // `counted`: this conversation's create is in the counter (see `startCounter`).
          Item: { ...record, titleLower: record.title?.toLowerCase(), counted: true, writeToken },
          ConditionExpression: 'attribute_not_exists(id)',
        }),
      );
    if (!(await conditionalWrite(put)) && !(await this.written(record.userId, record.id, writeToken))) {
      // The id was taken: give back the slot this call took (not one an earlier create of the id took).
      if (reserved?.added) await this.countOnce(record.userId, `u:${record.id}`, -1);
      return false;
    }
    const counter = reserved ? reserved.counter : await this.countOnce(record.userId, `c:${record.id}`, 1);
    if (counter && !counter.started) await this.startCounter(record.userId);
    return true;
  }

  /**
   * Counts `record` in its user's count if that stays within `limit` (one conditional UpdateItem);
   * the counter item after it, and whether this call added to it. Refused: when the op is in the sets
   * (a retry of our own write, or an earlier create of the same id) it goes on without adding,
   * otherwise the count is at the limit. Conversations stored before the counter existed join the
   * count at the user's first create (see `startCounter`), so until then the limit sees only newer ones.
   */
  private async reserve(
    record: ConversationRecord,
    limit: number,
  ): Promise<{ counter: Record<string, unknown> | undefined; added: boolean }> {
    const op = `c:${record.id}`;
    const counter = await this.countOnce(record.userId, op, 1, '(attribute_not_exists(#n) OR #n < :limit)', {
      ':limit': limit,
    });
    if (counter) return { counter, added: true };
    const item = (
      await this.db.send(
        new GetCommand({ TableName: this.table, Key: { userId: record.userId, id: COUNTER_ID }, ConsistentRead: true }),
      )
    ).Item;
    const ours = Array.from({ length: OP_SETS }, (_, i) => item?.[`ops${i}`] as Set<string> | undefined).some((s) =>
      s?.has(op),
    );
    if (ours) return { counter: item, added: false };
    throw new ConversationLimitError(limit, Number(item?.conversations ?? 0));
  }

  async get(userId: string, id: string): Promise<ConversationRecord | undefined> {
    const item = (
      await this.db.send(new GetCommand({ TableName: this.table, Key: { userId, id }, ConsistentRead: true }))
    ).Item;
    return isConversation(item) ? item : undefined;
  }

  async getMany(userId: string, ids: string[]): Promise<Map<string, ConversationRecord>> {
    const found = await batchGet<ConversationRecord & Record<string, unknown>>(this.table, 'id', ids, (id) => ({
      userId,
      id,
    }));
    for (const [id, item] of found) if (!isConversation(item)) found.delete(id);
    return found;
  }

  list(
    userId: string,
    filter: ConversationFilter,
    limit: number,
    startKey?: Record<string, unknown>,
  ): Promise<Page<ConversationRecord>> {
    return queryFilled(
      { ...userQuery(this.table, userId, filter), ScanIndexForward: false, ExclusiveStartKey: startKey },
      limit,
      BY_USER_KEY,
    );
  }

  /**
   * Unfiltered: the counter item, one GetItem. Filtered, or for a user whose counter has not started
   * yet (no create since it existed): the user's index, counted page by page.
   */
  async count(userId: string, filter: ConversationFilter): Promise<number> {
    if (!hasFilter(filter)) {
      const counter = (
        await this.db.send(
          new GetCommand({
            TableName: this.table,
            Key: { userId, id: COUNTER_ID },
            ConsistentRead: true,
            ProjectionExpression: 'conversations, started',
          }),
        )
      ).Item;
      if (counter?.started) return (counter.conversations as number | undefined) ?? 0;
    }
    return queryCount(userQuery(this.table, userId, filter));
  }

  async update(userId: string, id: string, version: number, changes: Partial<ConversationRecord>): Promise<boolean> {
    const entries = Object.entries({
      ...changes,
      ...(changes.title !== undefined ? { titleLower: changes.title?.toLowerCase() } : {}),
    });
    const names: Record<string, string> = { '#v': 'version' };
    const values: Record<string, unknown> = { ':v': version, ':next': version + 1 };
    const sets = entries.map(([k, v], i) => {
      names[`#a${i}`] = k;
      values[`:a${i}`] = v;
      return `#a${i} = :a${i}`;
    });
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { userId, id },
          UpdateExpression: `SET ${[...sets, '#v = :next'].join(', ')}`,
          ConditionExpression: 'attribute_exists(id) AND #v = :v',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  /**
   * Leaves a tombstone: no createdAt (so out of `byUser`), invisible to `get`, and the id stays
   * taken, so nobody can create a conversation under it and read the events still stored for it.
   * Only the delete that turns the live item into the tombstone counts it down. The tombstone keeps
   * `counted` from the item (one conditional put for each case), so a retry knows what it ended.
   */
  async delete(userId: string, id: string): Promise<void> {
    const writeToken = randomUUID();
    const tombstone = (counted: boolean) => () =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            userId,
            id,
            deletedAt: new Date(this.now()).toISOString(),
            writeToken,
            ...(counted ? { counted } : {}),
          },
          ConditionExpression: `attribute_exists(createdAt) AND ${counted ? 'attribute_exists' : 'attribute_not_exists'}(counted)`,
        }),
      );
    let counted = true;
    if (!(await conditionalWrite(tombstone(true)))) {
      counted = false;
      if (!(await conditionalWrite(tombstone(false)))) {
        const mine = await this.written(userId, id, writeToken);
        if (!mine) return;
        counted = mine.counted === true;
      }
    }
    // A conversation stored before the counter is in it only once the counter has started.
    const counter = await this.countOnce(userId, `d:${id}`, -1, counted ? undefined : 'attribute_exists(started)');
    if (counter && !counter.started) await this.startCounter(userId);
  }

  async *counterUsers(): AsyncGenerator<string[]> {
    const pages = paginateQuery(
      { client: this.db, pageSize: 500 },
      {
        TableName: this.table,
        IndexName: 'counters',
        KeyConditionExpression: 'counterShard = :s',
        ExpressionAttributeValues: { ':s': COUNTERS },
      },
    );
    for await (const page of pages) yield (page.Items ?? []).map((i) => i.userId as string);
  }

  async recount(userId: string): Promise<{ counter?: ConversationCounter; live: number }> {
    const item = (
      await this.db.send(
        new GetCommand({
          TableName: this.table,
          Key: { userId, id: COUNTER_ID },
          ConsistentRead: true,
          ProjectionExpression: 'conversations, started, changedAt',
        }),
      )
    ).Item;
    // The table, not index byUser: strongly consistent (a conversation just put is counted). Conversations
    // have createdAt; tombstones and the counter item do not.
    const live = await queryCount({
      TableName: this.table,
      KeyConditionExpression: 'userId = :u',
      FilterExpression: 'attribute_exists(createdAt)',
      ExpressionAttributeValues: { ':u': userId },
      ConsistentRead: true,
    });
    return {
      ...(item?.started
        ? {
            counter: {
              conversations: Number(item.conversations ?? 0),
              changedAt: item.changedAt as string | undefined,
            },
          }
        : {}),
      live,
    };
  }

  setCount(userId: string, seen: ConversationCounter, value: number): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { userId, id: COUNTER_ID },
          UpdateExpression: 'SET conversations = :v, changedAt = :now',
          ConditionExpression: `attribute_exists(started) AND conversations = :seen AND ${seen.changedAt ? 'changedAt = :at' : 'attribute_not_exists(changedAt)'}`,
          ExpressionAttributeValues: {
            ':v': value,
            ':seen': seen.conversations,
            ':now': new Date(this.now()).toISOString(),
            ...(seen.changedAt ? { ':at': seen.changedAt } : {}),
          },
        }),
      ),
    );
  }

  /**
   * The item, if it holds our write: a conditional write whose answer was lost (the SDK retried it
   * and the retry found the condition false) was still ours, and must still be counted.
   */
  private async written(userId: string, id: string, writeToken: string): Promise<Record<string, unknown> | undefined> {
    const item = (
      await this.db.send(
        new GetCommand({
          TableName: this.table,
          Key: { userId, id },
          ConsistentRead: true,
          ProjectionExpression: 'writeToken, counted',
        }),
      )
    ).Item;
    return item?.writeToken === writeToken ? item : undefined;
  }

  /**
   * Starts the user's counter: adds the live conversations stored before it existed (those without
   * `counted`; none are created any more) and marks it `started`, once (the first create or delete after
   * the counter appeared; for a new user that is a Query of one item). Until then `count` reads the index.
   */
  private async startCounter(userId: string): Promise<void> {
    const before = await queryCount({
      TableName: this.table,
      IndexName: 'byUser',
      KeyConditionExpression: 'userId = :u',
      FilterExpression: 'attribute_not_exists(counted)',
      ExpressionAttributeValues: { ':u': userId },
    });
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { userId, id: COUNTER_ID },
          UpdateExpression: 'ADD conversations :n SET started = :t',
          ConditionExpression: 'attribute_not_exists(started)',
          ExpressionAttributeValues: { ':n': before, ':t': true },
        }),
      ),
    );
  }

  /**
   * Adds `delta` to the user's count once for `op` (`c:<id>`, `d:<id>` or `u:<id>`, a create undone
   * because the id was taken: each happens once per id, since a deleted id stays taken) if `condition` holds; returns the counter item, or undefined when
   * the write was refused. The op goes into this minute's set and the write is refused if
   * any set holds it, so a retry (the SDK's after a lost answer) changes nothing; each write empties
   * the set of two minutes ago, so a retry is recognised for at least a minute and the item stays
   * small. One UpdateItem: dynalite has no transactions, and ADD is atomic under concurrent writers.
   */
  private async countOnce(
    userId: string,
    op: string,
    delta: number,
    condition?: string,
    values: Record<string, unknown> = {},
  ): Promise<Record<string, unknown> | undefined> {
    const minute = Math.floor(this.now() / 60_000);
    const names: Record<string, string> = {
      '#n': 'conversations',
      '#cur': `ops${minute % OP_SETS}`,
      '#old': `ops${(minute + 1) % OP_SETS}`,
    };
    const seen = Array.from({ length: OP_SETS }, (_, i) => {
      names[`#s${i}`] = `ops${i}`;
      return `NOT contains(#s${i}, :op)`;
    });
    return conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { userId, id: COUNTER_ID },
          // changedAt: the reconcile repairs a counter only when it sat still (docs/billing.md); counterShard lists it.
          UpdateExpression: 'ADD #n :d, #cur :ops SET changedAt = :now, counterShard = :shard REMOVE #old',
          ConditionExpression: [...seen, ...(condition ? [condition] : [])].join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':d': delta,
            ':ops': new Set([op]),
            ':op': op,
            ':now': new Date(this.now()).toISOString(),
            ':shard': COUNTERS,
            ...values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
  }
}

const PENDING = 'pending';

export class DynamoStartTaskStore implements StartTaskStore {
  private readonly db = documentClient();
  private readonly table = tableName('startTasks');

  async create(record: StartTaskRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...record, pendingShard: PENDING },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<StartTaskRecord | undefined> {
    return (await this.db.send(new GetCommand({ TableName: this.table, Key: { id }, ConsistentRead: true }))).Item as
      | StartTaskRecord
      | undefined;
  }

  getMany(ids: string[]): Promise<Map<string, StartTaskRecord>> {
    return batchGet<StartTaskRecord & Record<string, unknown>>(this.table, 'id', ids);
  }

  list(
    userId: string,
    o: {
      conversationId?: string;
      createdGte?: string;
      descending: boolean;
      limit: number;
      startKey?: Record<string, unknown>;
    },
  ): Promise<Page<StartTaskRecord>> {
    const filters = filterExpression([['app_conversation_id', '=', ':c', o.conversationId]]);
    return queryPage({
      TableName: this.table,
      IndexName: 'byUser',
      KeyConditionExpression: o.createdGte ? 'userId = :u AND createdAt >= :g' : 'userId = :u',
      ...filters,
      ExpressionAttributeValues: {
        ':u': userId,
        ...(o.createdGte ? { ':g': o.createdGte } : {}),
        ...filters.ExpressionAttributeValues,
      },
      ScanIndexForward: !o.descending,
      Limit: o.limit,
      ExclusiveStartKey: o.startKey,
    });
  }

  async transition(
    id: string,
    from: readonly StartTaskStatus[],
    status: StartTaskStatus,
    changes: { detail?: string | null; sandbox_id?: string | null },
  ): Promise<boolean> {
    const done = status === 'READY' || status === 'ERROR';
    const values: Record<string, unknown> = { ':s': status, ':now': new Date().toISOString() };
    for (const [i, f] of from.entries()) values[`:f${i}`] = f;
    const sets = ['#s = :s', 'updatedAt = :now'];
    if (changes.detail !== undefined) {
      sets.push('detail = :d');
      values[':d'] = changes.detail;
    }
    if (changes.sandbox_id !== undefined) {
      sets.push('sandbox_id = :sb');
      values[':sb'] = changes.sandbox_id;
    }
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: `SET ${sets.join(', ')}${done ? ' REMOVE pendingShard' : ''}`,
          ConditionExpression: `attribute_exists(id) AND #s IN (${from.map((_, i) => `:f${i}`).join(', ')})`,
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  async stalled(before: string, limit: number): Promise<StartTaskRecord[]> {
    const page = await queryPage<StartTaskRecord>({
      TableName: this.table,
      IndexName: 'pending',
      KeyConditionExpression: 'pendingShard = :p AND updatedAt < :b',
      ExpressionAttributeValues: { ':p': PENDING, ':b': before },
      Limit: limit,
    });
    return page.items;
  }
}
