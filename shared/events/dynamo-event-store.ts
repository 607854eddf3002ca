import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ConversationRef, EventPage, EventQuery, EventStore } from '#shared/events/event-store.ts';
import type { AgentEventEnvelope } from '#shared/events/model.ts';
import { documentClient, isConditionFailure, tableName } from '#shared/store/dynamo.ts';

const eventSk = (seq: number) => `e#${String(seq).padStart(12, '0')}`;
/** The partition of one conversation: conversation ids are unique per user only. */
const partitionOf = (c: ConversationRef) => `${c.userId}#${c.conversationId}`;

export class DynamoEventStore implements EventStore {
  private readonly db = documentClient();
  private readonly table = tableName('events');

  async append(conversation: ConversationRef, events: AgentEventEnvelope[]): Promise<number> {
    if (events.length === 0) return 0;
    const conversationKey = partitionOf(conversation);
    // Reserve a block of sequence numbers in one atomic update; unused ones leave harmless gaps.
    const counter = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { conversationKey, sk: 'counter' },
        UpdateExpression: 'ADD nextSeq :n',
        ExpressionAttributeValues: { ':n': events.length },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const first = (counter.Attributes!.nextSeq as number) - events.length + 1;
    let added = 0;
    for (const [i, event] of events.entries()) {
      let seq = first + i;
      try {
        // The guard claims the event id; a retry finds it and reuses the first attempt's position.
        await this.db.send(
          new PutCommand({
            TableName: this.table,
            Item: { conversationKey, sk: `id#${event.id}`, seq },
            ConditionExpression: 'attribute_not_exists(sk)',
          }),
        );
        added++;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        const guard = await this.db.send(new GetCommand({ TableName: this.table, Key: { conversationKey, sk: `id#${event.id}` }, ConsistentRead: true }));
        seq = guard.Item!.seq as number;
      }
      // Written after the guard, so an attempt cut off here is completed by the retry.
      await this.db.send(
        new PutCommand({
          TableName: this.table,
          // As JSON text: an event is the agent's, and may hold numbers DynamoDB cannot store (1e-300).
          Item: { conversationKey, sk: eventSk(seq), seq, kind: event.kind, timestamp: event.timestamp, event: JSON.stringify(event) },
        }),
      );
    }
    return added;
  }

  private filters(q: Omit<EventQuery, 'descending' | 'limit' | 'startKey'>): Partial<QueryCommandInput> {
    const conditions: string[] = [];
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    if (q.kind) {
      conditions.push('#kind = :kind');
      names['#kind'] = 'kind';
      values[':kind'] = q.kind;
    }
    if (q.timestampGte) {
      conditions.push('#ts >= :gte');
      names['#ts'] = 'timestamp';
      values[':gte'] = q.timestampGte;
    }
    if (q.timestampLt) {
      conditions.push('#ts < :lt');
      names['#ts'] = 'timestamp';
      values[':lt'] = q.timestampLt;
    }
    return conditions.length
      ? { FilterExpression: conditions.join(' AND '), ExpressionAttributeNames: names, ExpressionAttributeValues: values }
      : { ExpressionAttributeValues: {} };
  }

  private keyCondition(conversation: ConversationRef, base: Partial<QueryCommandInput>): Partial<QueryCommandInput> {
    return {
      KeyConditionExpression: 'conversationKey = :c AND begins_with(sk, :e)',
      ExpressionAttributeValues: { ...base.ExpressionAttributeValues, ':c': partitionOf(conversation), ':e': 'e#' },
    };
  }

  async query(conversation: ConversationRef, q: EventQuery): Promise<EventPage> {
    const f = this.filters(q);
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        ...f,
        ...this.keyCondition(conversation, f),
        ScanIndexForward: !q.descending,
        Limit: q.limit,
        ExclusiveStartKey: q.startKey,
        ConsistentRead: true,
      }),
    );
    const items = out.Items ?? [];
    const tail = items.at(-1);
    return {
      items: items.map((i) => JSON.parse(i.event as string) as AgentEventEnvelope),
      lastKey: out.LastEvaluatedKey,
      tailKey: tail ? { conversationKey: tail.conversationKey, sk: tail.sk } : undefined,
    };
  }

  async count(conversation: ConversationRef, q: Omit<EventQuery, 'descending' | 'limit' | 'startKey'>): Promise<number> {
    const f = this.filters(q);
    let total = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({ TableName: this.table, ...f, ...this.keyCondition(conversation, f), Select: 'COUNT', ExclusiveStartKey: startKey }),
      );
      total += out.Count ?? 0;
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return total;
  }
}
