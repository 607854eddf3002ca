import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ConversationRef } from '#shared/events/event-store.ts';
import { conditionalReturn, conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';
import type { ConnectionStore, PendingConnection, StreamConnection } from '#shared/stream/connection-store.ts';

/**
 * The one partition of pending connections (first-message auth): no user is known yet, and the
 * sweeper and the caps read them with a Query (the functions have no Scan). They live 10 s each.
 */
const PENDING = 'pending';

/**
 * A pending connection's marker in the partition of its client address (`pendingfrom#<address>`), which
 * `addPending` counts: a Query of a few items, where a filter on the one `pending` partition would read
 * every pending connection of every address on each `$connect`.
 */
const fromAddressKey = (address: string, connectionId: string) => ({
  conversationKey: `pendingfrom#${address}`,
  connectionId: `from#${connectionId}`,
});

/** How long after its deadline a marker still counts (the sweeper runs every minute; beyond this it is a leak). */
const STALE_MARKER_MS = 10 * 60_000;

/** The conversation's partition, as in the events table (conversation ids are unique per user only). */
const partitionOf = (c: ConversationRef) => `${c.userId}#${c.conversationId}`;

const fromItem = (item: Record<string, unknown>): StreamConnection => {
  return {
    conversation: { userId: item.userId as string, conversationId: item.conversationId as string },
    connectionId: item.connectionId as string,
    sentSeq: item.sentSeq as number,
    wantSeq: (item.wantSeq as number | undefined) ?? 0,
    ready: item.ready === true,
    connectedAt: item.connectedAt as string,
  };
};

export class DynamoConnectionStore implements ConnectionStore {
  private readonly db = documentClient();
  private readonly table = tableName('streamConnections');

  private key(conversation: ConversationRef, connectionId: string) {
    return { conversationKey: partitionOf(conversation), connectionId };
  }

  async add(c: {
    conversation: ConversationRef;
    connectionId: string;
    sentSeq: number;
    connectedAt: Date;
    expiresAt: Date;
  }): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...this.key(c.conversation, c.connectionId),
          userId: c.conversation.userId,
          conversationId: c.conversation.conversationId,
          sentSeq: c.sentSeq,
          wantSeq: c.sentSeq,
          ready: false,
          connectedAt: c.connectedAt.toISOString(),
          // TTL: API Gateway ends every connection within 2 hours, $disconnect or not.
          expiresAtEpoch: Math.ceil(c.expiresAt.getTime() / 1000),
        },
        ConditionExpression: 'attribute_not_exists(connectionId)',
      }),
    );
  }

  async get(conversation: ConversationRef, connectionId: string): Promise<StreamConnection | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: this.key(conversation, connectionId), ConsistentRead: true }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** A connection's item (pending or open) by its id: connection ids are unique, so at most one. */
  private async byConnection(connectionId: string): Promise<Record<string, any> | undefined> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'byConnection',
        KeyConditionExpression: 'connectionId = :c',
        ExpressionAttributeValues: { ':c': connectionId },
        Limit: 1,
      }),
    );
    return out.Items?.[0];
  }

  async find(connectionId: string): Promise<ConversationRef | undefined> {
    const item = await this.byConnection(connectionId);
    return item && !item.pending ? fromItem(item).conversation : undefined;
  }

  async count(conversation: ConversationRef, upTo: number): Promise<{ conversation: number; user: number }> {
    const counted = async (input: Record<string, unknown>) => {
      let n = 0;
      let start: Record<string, unknown> | undefined;
      do {
        const out = await this.db.send(
          new QueryCommand({
            TableName: this.table,
            Select: 'COUNT',
            ...input,
            ...(start ? { ExclusiveStartKey: start } : {}),
          } as never),
        );
        n += out.Count ?? 0;
        start = out.LastEvaluatedKey;
      } while (start && n < upTo);
      return n;
    };
    const [inConversation, ofUser] = await Promise.all([
      counted({
        KeyConditionExpression: 'conversationKey = :c',
        ExpressionAttributeValues: { ':c': partitionOf(conversation) },
        ConsistentRead: true,
      }),
      counted({
        IndexName: 'byUser',
        KeyConditionExpression: 'userId = :u',
        ExpressionAttributeValues: { ':u': conversation.userId },
      }),
    ]);
    return { conversation: inConversation, user: ofUser };
  }

  async list(conversation: ConversationRef): Promise<StreamConnection[]> {
    const items = await queryAll<Record<string, unknown>>({
      TableName: this.table,
      KeyConditionExpression: 'conversationKey = :p',
      ExpressionAttributeValues: { ':p': partitionOf(conversation) },
      ConsistentRead: true,
    });
    return items.map(fromItem);
  }

  async remove(conversation: ConversationRef, connectionId: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: this.key(conversation, connectionId) }));
  }

  async want(conversation: ConversationRef, connectionId: string, seq: number): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(conversation, connectionId),
          UpdateExpression: 'SET wantSeq = :s',
          ConditionExpression: 'attribute_exists(connectionId) AND wantSeq < :s',
          ExpressionAttributeValues: { ':s': seq },
        }),
      ),
    );
  }

  markReady(conversation: ConversationRef, connectionId: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(conversation, connectionId),
          UpdateExpression: 'SET ready = :t',
          ConditionExpression: 'attribute_exists(connectionId)',
          ExpressionAttributeValues: { ':t': true },
        }),
      ),
    );
  }

  async lease(
    conversation: ConversationRef,
    connectionId: string,
    owner: string,
    nowMs: number,
    untilMs: number,
  ): Promise<StreamConnection | undefined> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(conversation, connectionId),
          UpdateExpression: 'SET leaseOwner = :o, leaseUntil = :u',
          ConditionExpression:
            'ready = :t AND sentSeq < wantSeq AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
          ExpressionAttributeValues: { ':o': owner, ':u': untilMs, ':t': true, ':now': nowMs },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item ? fromItem(item) : undefined;
  }

  advance(
    conversation: ConversationRef,
    connectionId: string,
    owner: string,
    from: number,
    to: number,
    untilMs: number,
  ): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(conversation, connectionId),
          UpdateExpression: 'SET sentSeq = :to, leaseUntil = :u',
          ConditionExpression: 'leaseOwner = :o AND sentSeq = :from',
          ExpressionAttributeValues: { ':to': to, ':u': untilMs, ':o': owner, ':from': from },
        }),
      ),
    );
  }

  async release(
    conversation: ConversationRef,
    connectionId: string,
    owner: string,
  ): Promise<StreamConnection | undefined> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(conversation, connectionId),
          UpdateExpression: 'REMOVE leaseOwner, leaseUntil',
          ConditionExpression: 'leaseOwner = :o',
          ExpressionAttributeValues: { ':o': owner },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item ? fromItem(item) : undefined;
  }

  async addPending(p: PendingConnection, maxPerAddress: number): Promise<boolean> {
    const marker = fromAddressKey(p.address, p.connectionId);
    const expiresAtEpoch = Math.ceil(Date.parse(p.deadline) / 1000) + 3600;
    // The address's marker first, then the count: of racing connections from one address, each counts
    // the others' markers that were written before its own count, so they never all pass together.
    await this.db.send(
      new PutCommand({ TableName: this.table, Item: { ...marker, deadline: p.deadline, expiresAtEpoch } }),
    );
    if ((await this.pendingFrom(p.address, p.deadline, maxPerAddress)) > maxPerAddress) {
      await this.db.send(new DeleteCommand({ TableName: this.table, Key: marker }));
      return false;
    }
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          conversationKey: PENDING,
          connectionId: p.connectionId,
          pending: true,
          conversationId: p.conversationId,
          address: p.address,
          query: JSON.stringify(p.query),
          deadline: p.deadline,
          // TTL only as a backstop: the message function, $disconnect or the sweeper removes it.
          expiresAtEpoch,
        },
        ConditionExpression: 'attribute_not_exists(connectionId)',
      }),
    );
    return true;
  }

  /**
   * The markers of an address's pending connections, counted up to `upTo + 1` with a consistent read.
   * A marker whose deadline is long past is a leak (a function that died between removing a pending
   * record and its marker) and is not counted: the sweeper removes live ones within a run or two.
   */
  private async pendingFrom(address: string, deadline: string, upTo: number): Promise<number> {
    const since = new Date(Date.parse(deadline) - STALE_MARKER_MS).toISOString();
    let n = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'conversationKey = :a',
          FilterExpression: 'deadline > :since',
          ExpressionAttributeValues: { ':a': fromAddressKey(address, '').conversationKey, ':since': since },
          Select: 'COUNT',
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      n += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start && n <= upTo);
    return n;
  }

  async takePending(connectionId: string): Promise<PendingConnection | undefined> {
    const item = await this.byConnection(connectionId);
    if (!item?.pending) return undefined;
    const removed = await conditionalReturn(() =>
      this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { conversationKey: item.conversationKey, connectionId },
          ConditionExpression: 'attribute_exists(connectionId)',
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    if (!removed) return undefined;
    const pending = pendingOf(item);
    if (pending.address)
      await this.db.send(
        new DeleteCommand({ TableName: this.table, Key: fromAddressKey(pending.address, connectionId) }),
      );
    return pending;
  }

  expiredPending(now: Date): Promise<PendingConnection[]> {
    return this.pendingWhere('deadline < :now', { ':now': now.toISOString() });
  }

  private async pendingWhere(filter: string, values: Record<string, unknown>): Promise<PendingConnection[]> {
    const items = await queryAll<Record<string, unknown>>({
      TableName: this.table,
      KeyConditionExpression: 'conversationKey = :p',
      FilterExpression: filter,
      ExpressionAttributeValues: { ':p': PENDING, ...values },
      ConsistentRead: true,
    });
    return items.map(pendingOf);
  }
}

const pendingOf = (item: Record<string, unknown>): PendingConnection => ({
  conversationId: item.conversationId as string,
  connectionId: item.connectionId as string,
  address: (item.address as string | undefined) ?? '',
  query: JSON.parse(item.query as string) as Record<string, string | undefined>,
  deadline: item.deadline as string,
});
