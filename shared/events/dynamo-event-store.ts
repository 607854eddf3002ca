import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  charge,
  MAX_SEQ_AHEAD,
  RateLimitedError,
  SequenceAheadError,
  type AppendLimits,
  type Appended,
  type Head,
  type ConversationRef,
  type EventPage,
  type EventQuery,
  type EventStore,
} from '#shared/events/event-store.ts';
import { logger } from '#shared/logging.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { documentClient, isConditionFailure, tableName } from '#shared/store/dynamo.ts';
import { batchGet, batchPut, queryCount } from '#shared/store/query.ts';

/** The partition of one conversation: conversation ids are unique per user only. */
const partitionOf = (c: ConversationRef) => `${c.userId}#${c.conversationId}`;
/**
 * `seq = 0` is the counter item: `lastSeq` (the gap-free end) and `ahead`, set while a batch waits
 * beyond a gap: a fresh random mark each time, so a catch-up that read an older mark cannot clear a newer one.
 */
const COUNTER = 0;
/** Catch-up attempts before it leaves the counter to the next batch (each lost race is another writer's progress). */
const CATCH_UP_ATTEMPTS = 10;
/** Query rounds a filtered page may take before it returns what it has (bounded read cost). */
const MAX_ROUNDS = 10;

type Filters = Omit<EventQuery, 'descending' | 'limit' | 'startKey'>;

/** The sequence number in a page position; the cursor codec signs positions, this only checks the shape. */
const positionOf = (key: Record<string, unknown> | undefined): number | undefined =>
  typeof key?.seq === 'number' && Number.isSafeInteger(key.seq) && key.seq >= 0 ? key.seq : undefined;

export class DynamoEventStore implements EventStore {
  private readonly db = documentClient();
  private readonly table = tableName('events');

  async append(
    conversation: ConversationRef,
    firstSeq: number,
    events: AgentEventEnvelope[],
    committed?: number | Head,
    limits?: AppendLimits,
  ): Promise<Appended> {
    const conversationKey = partitionOf(conversation);
    let head: Head =
      typeof committed === 'object'
        ? committed
        : committed === undefined || limits
          ? await this.counter(conversationKey)
          : { lastSeq: committed };
    const last = head.lastSeq;
    if (firstSeq > last + 1 + MAX_SEQ_AHEAD) throw new SequenceAheadError(last);
    // At or below `last` is committed: a retry of it is a no-op, and a rewrite of history is refused by skipping.
    const all = events.map((event, i) => ({ seq: firstSeq + i, event })).filter((e) => e.seq > last);
    // Past the plan's cap nothing is stored; what fits is.
    let fresh = limits ? all.filter((e) => e.seq <= limits.maxEvents) : all;
    const overCap = fresh.length < all.length ? { overCap: true as const } : {};
    if (fresh.length === 0) return { added: 0, lastSeq: last, ...overCap };
    // Each event's JSON text once: its bytes are charged and it is what is stored.
    const texts = new Map(fresh.map((e) => [e.seq, JSON.stringify(e.event)]));
    if (limits) {
      let bytes = 0;
      for (const text of texts.values()) bytes += Buffer.byteLength(text);
      head = await this.chargeBucket(conversationKey, head, fresh.length, bytes, limits);
      // Racing posts of these numbers committed some meanwhile (and paid for them): never store those again.
      const end = head.lastSeq;
      fresh = fresh.filter((e) => e.seq > end);
      if (fresh.length === 0) return { added: 0, lastSeq: end, ...overCap };
    }
    await batchPut(
      this.table,
      fresh.map(({ seq, event }) => ({
        conversationKey,
        seq,
        kindKey: `${conversationKey}#${event.kind}`,
        timestamp: event.timestamp,
        // As JSON text: an event is the agent's, and may hold numbers DynamoDB cannot store (1e-300).
        event: texts.get(seq)!,
      })),
    );
    const from = fresh[0]!.seq;
    const to = fresh.at(-1)!.seq;
    /** Of this batch, how many a counter move from `moved` to `end` by this call committed. */
    const ours = (moved: { from: number; end: number } | undefined) =>
      moved ? Math.max(0, Math.min(to, moved.end) - Math.max(from - 1, moved.from)) : 0;
    if (from !== last + 1 && from !== head.lastSeq + 1) {
      // Beyond a gap: flag it (after the items are stored), so whoever fills the gap carries the counter
      // over this batch too. The catch-up is this batch's to do only when the gap is no longer open:
      // the counter reached it, or the number after the counter is stored (a filler at work, or one
      // that died before its catch-up). Stored, not committed: it counts as added only if this call's
      // catch-up moved the counter over it.
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { conversationKey, seq: COUNTER },
          UpdateExpression: 'SET ahead = :mark',
          ExpressionAttributeValues: { ':mark': randomUUID() },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const at = (out.Attributes?.lastSeq as number | undefined) ?? 0;
      const open = at + 1 < from && !(await this.stored(conversationKey, at + 1));
      if (open) return { added: 0, lastSeq: at, ...overCap };
      const moved = await this.catchUp(conversationKey, at);
      return { added: ours(moved.moved), lastSeq: moved.end, ...overCap };
    }
    // Contiguous with the committed end: move the counter over this batch, forward only. What it
    // moved over (from the end it held) is what this call committed: a racing post of the same
    // batch that moved it first leaves this one nothing.
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { conversationKey, seq: COUNTER },
          UpdateExpression: 'SET lastSeq = :to',
          ConditionExpression: 'attribute_not_exists(lastSeq) OR lastSeq BETWEEN :last AND :below',
          ExpressionAttributeValues: { ':to': to, ':last': head.lastSeq, ':below': to - 1 },
          ReturnValues: 'ALL_OLD',
        }),
      );
      const added = to - ((out.Attributes?.lastSeq as number | undefined) ?? 0);
      const end = out.Attributes?.ahead ? (await this.catchUp(conversationKey, to)).end : to;
      return { added, lastSeq: end, ...overCap };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      // Only the end can have failed it: another post of this batch (or a later one) moved it already.
      return { added: 0, lastSeq: to, ...overCap };
    }
  }

  /**
   * Charges `n` events to the conversation's bucket before anything is stored, in a write conditioned
   * on the bucket as read: racing posts serialize on it, and one over the rate stores nothing (throws
   * `RateLimitedError`). Returns the head it charged against. Charging after the store, in the write
   * that commits, let racing posts store (and a catch-up commit) every batch while most were refused.
   */
  private async chargeBucket(
    conversationKey: string,
    head: Head,
    n: number,
    bytes: number,
    limits: AppendLimits,
  ): Promise<Head> {
    const now = limits.now ?? Date.now;
    for (let attempt = 0; attempt < CATCH_UP_ATTEMPTS; attempt++) {
      const out = charge(head.tat, now(), n, limits.eventsPerSecond);
      if ('retryAfterMs' in out) throw new RateLimitedError(out.retryAfterMs);
      try {
        await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { conversationKey, seq: COUNTER },
            // The batch's bytes, and the mark that puts the counter in index `grownBytes` for the sweeper's sum
            // (the same value every time: the index is written only when the mark appears).
            UpdateExpression: `SET tat = :tat${limits.agentReport ? ', agentReport = :report' : ''}${limits.orgId ? ', bytesOrg = :org ADD bytes :bytes' : ''}`,
            ConditionExpression: head.tat === undefined ? 'attribute_not_exists(tat)' : 'tat = :readTat',
            ExpressionAttributeValues: {
              ':tat': out.tat,
              ...(head.tat === undefined ? {} : { ':readTat': head.tat }),
              ...(limits.orgId ? { ':org': limits.orgId, ':bytes': bytes } : {}),
              ...(limits.agentReport ? { ':report': limits.agentReport } : {}),
            },
          }),
        );
        return head;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        // Another post moved the bucket since it was read: charge again from what it left.
        head = await this.counter(conversationKey);
      }
    }
    // Other posts keep moving the bucket: as busy as a rate refusal; the sandbox retries.
    throw new RateLimitedError(1000);
  }

  head(conversation: ConversationRef): Promise<Head> {
    return this.counter(partitionOf(conversation));
  }

  /**
   * Moves the counter over every stored number that follows it without a gap; returns the end it
   * wrote or, when a gap stays (or other writers keep winning), `known`, an end already committed.
   * The flag is cleared only if no batch set it since it was read: that batch may be past what the
   * Query saw, and it left the catch-up to whoever fills its gap, who learns of it from the flag. (Moving
   * the counter without clearing needs no such check: a batch that flagged meanwhile saw the number
   * after the old end stored, and catches up itself; see `append`.)
   */
  private async catchUp(
    conversationKey: string,
    known: number,
  ): Promise<{ end: number; moved?: { from: number; end: number } }> {
    for (let attempt = 0; attempt < CATCH_UP_ATTEMPTS; attempt++) {
      const { lastSeq: last, ahead } = await this.counter(conversationKey);
      known = Math.max(known, last);
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'conversationKey = :c AND seq > :last',
          ExpressionAttributeValues: { ':c': conversationKey, ':last': last },
          ProjectionExpression: 'seq',
          Limit: MAX_SEQ_AHEAD + 200,
          ConsistentRead: true,
        }),
      );
      const stored = (out.Items ?? []).map((i) => i.seq as number);
      let end = last;
      for (const seq of stored) if (seq === end + 1) end++;
      const waiting = stored.some((seq) => seq > end + 1);
      if (end === last && waiting) return { end: last }; // still a gap: the flag stays for whoever fills it
      try {
        await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { conversationKey, seq: COUNTER },
            ...(waiting
              ? {
                  UpdateExpression: 'SET lastSeq = :end',
                  ConditionExpression: 'attribute_not_exists(lastSeq) OR lastSeq = :last',
                  ExpressionAttributeValues: { ':end': end, ':last': last },
                }
              : {
                  UpdateExpression: 'SET lastSeq = :end REMOVE ahead',
                  ConditionExpression: `(attribute_not_exists(lastSeq) OR lastSeq = :last) AND ${ahead === undefined ? 'attribute_not_exists(ahead)' : 'ahead = :mark'}`,
                  ExpressionAttributeValues: {
                    ':end': end,
                    ':last': last,
                    ...(ahead === undefined ? {} : { ':mark': ahead }),
                  },
                }),
          }),
        );
        return { end, moved: { from: last, end } };
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
      }
    }
    // Other writers kept winning: the flag stays, and the next batch's catch-up carries the counter on.
    logger.warn('events.catch-up-deferred', { conversationKey, lastSeq: known });
    return { end: known };
  }

  /** Whether number `seq` is stored (a consistent read of its key only). */
  private async stored(conversationKey: string, seq: number): Promise<boolean> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { conversationKey, seq },
        ProjectionExpression: 'seq',
        ConsistentRead: true,
      }),
    );
    return out.Item !== undefined;
  }

  /** The counter item (strongly consistent): the committed end and the flag's mark, if set. */
  private async counter(conversationKey: string): Promise<Head & { ahead?: unknown }> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { conversationKey, seq: COUNTER }, ConsistentRead: true }),
    );
    return {
      lastSeq: (out.Item?.lastSeq as number | undefined) ?? 0,
      ahead: out.Item?.ahead,
      tat: out.Item?.tat as number | undefined,
      ...(typeof out.Item?.orgBytes === 'number' ? { orgBytes: out.Item.orgBytes } : {}),
      ...(typeof out.Item?.agentReport === 'string' ? { agentReport: out.Item.agentReport } : {}),
    };
  }

  private async committed(conversationKey: string): Promise<number> {
    return (await this.counter(conversationKey)).lastSeq;
  }

  lastSeq(conversation: ConversationRef): Promise<number> {
    return this.committed(partitionOf(conversation));
  }

  async query(conversation: ConversationRef, q: EventQuery): Promise<EventPage> {
    const conversationKey = partitionOf(conversation);
    const after = positionOf(q.startKey);
    if (!q.kind && !q.timestampGte && !q.timestampLt && !q.descending)
      return this.untilGap(conversationKey, after ?? 0, q.limit);
    // Everything else reads the committed range only, where no number is missing.
    const last = await this.committed(conversationKey);
    const [lo, hi] = q.descending ? [1, Math.min(last, (after ?? last + 1) - 1)] : [(after ?? 0) + 1, last];
    if (lo > hi) return { items: [], tailKey: q.descending ? undefined : { seq: Math.max(after ?? 0, last) } };
    const input = this.rangeQuery(conversationKey, q, lo, hi);
    // Table items carry the event; `byKind` items only their number (and timestamp), read after.
    const items: { seq: number; event?: string }[] = [];
    let position = q.descending ? hi + 1 : lo - 1;
    let start: Record<string, unknown> | undefined;
    let more = false;
    for (let round = 0; round < MAX_ROUNDS && items.length < q.limit; round++) {
      const want = q.limit - items.length;
      // A filter applies after the read limit, so read more than the page needs and cut.
      const out = await this.db.send(
        new QueryCommand({
          ...input,
          Limit: input.FilterExpression ? Math.max(want, 200) : want,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        if (items.length === q.limit) {
          more = true;
          break;
        }
        items.push({ seq: item.seq as number, event: item.event as string | undefined });
        position = item.seq as number;
      }
      if (more) break;
      start = out.LastEvaluatedKey;
      if (!start) {
        position = q.descending ? lo - 1 : hi; // read to the end of the range
        break;
      }
      position = start.seq as number;
    }
    more ||= start !== undefined && position !== (q.descending ? lo : hi);
    return {
      items: await this.events(conversationKey, items),
      lastKey: more ? { seq: position } : undefined,
      tailKey: { seq: position },
    };
  }

  /** The events of a page in its order, fetching from the table those the index read only by number. */
  private async events(
    conversationKey: string,
    items: { seq: number; event?: string }[],
  ): Promise<AgentEventEnvelope[]> {
    const missing = items.filter((i) => i.event === undefined).map((i) => i.seq);
    const fetched = missing.length
      ? await batchGet<{ event: string }, number>(this.table, 'seq', missing, (seq) => ({ conversationKey, seq }))
      : new Map<number, { event: string }>();
    return items.map(({ seq, event }) => {
      const text = event ?? fetched.get(seq)?.event;
      // Below the committed end every number is stored and never removed: a miss is a broken table.
      if (text === undefined) throw new Error(`Event ${seq} of a committed range is missing`);
      return JSON.parse(text) as AgentEventEnvelope;
    });
  }

  /** Ascending, unfiltered: reads past the counter too, but stops at the first missing number. */
  private async untilGap(conversationKey: string, after: number, limit: number): Promise<EventPage> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'conversationKey = :c AND seq > :after',
        ExpressionAttributeValues: { ':c': conversationKey, ':after': after },
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    const items: AgentEventEnvelope[] = [];
    let next = after + 1;
    for (const item of out.Items ?? []) {
      if (item.seq !== next) break;
      items.push(JSON.parse(item.event as string) as AgentEventEnvelope);
      next++;
    }
    const full = items.length === limit && out.LastEvaluatedKey !== undefined;
    return { items, lastKey: full ? { seq: next - 1 } : undefined, tailKey: { seq: next - 1 } };
  }

  /** The Query for numbers lo..hi: on the table, or on `byKind` for a kind; timestamps as a filter. */
  private rangeQuery(
    conversationKey: string,
    q: Filters & { descending?: boolean },
    lo: number,
    hi: number,
  ): QueryCommandInput {
    const names: Record<string, string> = { '#s': 'seq' };
    const values: Record<string, unknown> = { ':lo': lo, ':hi': hi };
    const filters: string[] = [];
    if (q.timestampGte) {
      names['#ts'] = 'timestamp';
      values[':gte'] = q.timestampGte;
      filters.push('#ts >= :gte');
    }
    if (q.timestampLt) {
      names['#ts'] = 'timestamp';
      values[':lt'] = q.timestampLt;
      filters.push('#ts < :lt');
    }
    const partition = q.kind
      ? { IndexName: 'byKind', KeyConditionExpression: 'kindKey = :p AND #s BETWEEN :lo AND :hi' }
      : { KeyConditionExpression: 'conversationKey = :p AND #s BETWEEN :lo AND :hi', ConsistentRead: true };
    values[':p'] = q.kind ? `${conversationKey}#${q.kind}` : conversationKey;
    return {
      TableName: this.table,
      ...partition,
      ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ScanIndexForward: !q.descending,
    };
  }

  async count(conversation: ConversationRef, q: Filters): Promise<number> {
    const conversationKey = partitionOf(conversation);
    const last = await this.committed(conversationKey);
    if (!q.kind && !q.timestampGte && !q.timestampLt) return last;
    return last === 0 ? 0 : queryCount(this.rangeQuery(conversationKey, q, 1, last));
  }
}
