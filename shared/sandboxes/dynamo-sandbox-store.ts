import {
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  paginateQuery,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  LIVE_SHARD,
  RUNNING_COUNTERS,
  type RunningCounter,
  type SandboxPatch,
  type SandboxRecord,
  runningCounterId,
  type SandboxStore,
  type StoredCommand,
} from '#shared/sandboxes/sandbox-store.ts';
import { conditionalReturn, conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { batchGet, queryAll, queryCount } from '#shared/store/query.ts';

export class DynamoSandboxStore implements SandboxStore {
  private readonly db = documentClient();
  private readonly table = tableName('sandboxes');
  private commandsTable?: string;

  /** Only the bridge and delete paths touch the command queue, so only their functions need TABLE_COMMANDS. */
  private get commands(): string {
    this.commandsTable ??= tableName('commands');
    return this.commandsTable;
  }

  async create(record: SandboxRecord): Promise<void> {
    await this.db.send(
      new PutCommand({ TableName: this.table, Item: record, ConditionExpression: 'attribute_not_exists(id)' }),
    );
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { id }, ConsistentRead: true }));
    return out.Item as SandboxRecord | undefined;
  }

  batchGet(ids: string[]): Promise<Map<string, SandboxRecord>> {
    return batchGet<SandboxRecord & Record<string, unknown>>(this.table, 'id', ids);
  }

  async listByUser(userId: string, limit: number, startKey?: Record<string, unknown>) {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'byUser',
        KeyConditionExpression: 'userId = :u',
        ExpressionAttributeValues: { ':u': userId },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: startKey,
      }),
    );
    return { items: (out.Items ?? []) as SandboxRecord[], lastKey: out.LastEvaluatedKey };
  }

  /** The user's partition of `byUser`, counted a page at a time (a COUNT Query returns no items). */
  countPaused(userId: string): Promise<number> {
    return queryCount({
      TableName: this.table,
      IndexName: 'byUser',
      KeyConditionExpression: 'userId = :u',
      FilterExpression: '#s = :paused AND attribute_not_exists(deletedAt)',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':u': userId, ':paused': 'PAUSED' },
    });
  }

  listLiveByUser(userId: string): Promise<SandboxRecord[]> {
    return this.queryAll('liveByUser', 'liveUserId', userId);
  }

  listLive(): Promise<SandboxRecord[]> {
    return this.queryAll('live', 'liveShard', LIVE_SHARD);
  }

  private queryAll(index: string, key: string, value: string): Promise<SandboxRecord[]> {
    return queryAll({
      TableName: this.table,
      IndexName: index,
      KeyConditionExpression: '#k = :v',
      ExpressionAttributeNames: { '#k': key },
      ExpressionAttributeValues: { ':v': value },
    });
  }

  async update(id: string, expectedVersion: number, patch: SandboxPatch): Promise<SandboxRecord | undefined> {
    const names: Record<string, string> = { '#version': 'version', '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = {
      ':expected': expectedVersion,
      ':next': expectedVersion + 1,
      ':now': new Date().toISOString(),
    };
    const sets = ['#version = :next', '#updatedAt = :now'];
    const removes: string[] = [];
    Object.entries(patch).forEach(([field, value], i) => {
      if (value === undefined || field === 'id' || field === 'version' || field === 'updatedAt') return;
      names[`#f${i}`] = field;
      if (value === null) removes.push(`#f${i}`);
      else {
        values[`:v${i}`] = value;
        sets.push(`#f${i} = :v${i}`);
      }
    });
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: 'attribute_exists(id) AND #version = :expected',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item as SandboxRecord | undefined;
  }

  async touchActivity(id: string, at: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          // The sparse index keys move with it, so the sweeper sees the new time.
          UpdateExpression: 'SET lastActivityAt = :at',
          ConditionExpression: '#status = :running AND attribute_not_exists(deletedAt) AND lastActivityAt < :at',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':at': at, ':running': 'RUNNING' },
        }),
      ),
    );
  }

  async reserveRunning(orgId: string, limit: number): Promise<{ granted: boolean; used: number }> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: runningCounterId(orgId) },
          // changedAt: the reconcile repairs a counter only when it sat still (docs/billing.md); counterShard lists it.
          UpdateExpression: 'ADD running :one SET changedAt = :now, counterShard = :shard',
          ConditionExpression: 'attribute_not_exists(running) OR running < :limit',
          ExpressionAttributeValues: {
            ':one': 1,
            ':limit': limit,
            ':now': new Date().toISOString(),
            ':shard': RUNNING_COUNTERS,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    if (item) return { granted: true, used: Number(item.running) };
    return { granted: false, used: await this.runningOf(orgId) };
  }

  async releaseRunning(orgId: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: runningCounterId(orgId) },
          UpdateExpression: 'ADD running :minus SET changedAt = :now',
          ConditionExpression: 'running > :zero',
          ExpressionAttributeValues: { ':minus': -1, ':zero': 0, ':now': new Date().toISOString() },
        }),
      ),
    );
  }

  async runningOf(orgId: string): Promise<number> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { id: runningCounterId(orgId) }, ConsistentRead: true }),
    );
    return Number(out.Item?.running ?? 0);
  }
  async runningCounter(orgId: string): Promise<RunningCounter | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { id: runningCounterId(orgId) }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    return { orgId, running: Number(out.Item.running ?? 0), changedAt: out.Item.changedAt as string | undefined };
  }

  async *runningCounterOrgs(): AsyncGenerator<string[]> {
    const prefix = runningCounterId('');
    const pages = paginateQuery(
      { client: this.db, pageSize: 500 },
      {
        TableName: this.table,
        IndexName: 'counters',
        KeyConditionExpression: 'counterShard = :s',
        ExpressionAttributeValues: { ':s': RUNNING_COUNTERS },
      },
    );
    for await (const page of pages) yield (page.Items ?? []).map((i) => (i.id as string).slice(prefix.length));
  }

  setRunning(orgId: string, seen: RunningCounter | undefined, value: number): Promise<boolean> {
    const conditions = seen
      ? ['running = :seen', seen.changedAt ? 'changedAt = :at' : 'attribute_not_exists(changedAt)']
      : ['attribute_not_exists(running)'];
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: runningCounterId(orgId) },
          UpdateExpression: 'SET running = :v, changedAt = :now, counterShard = :shard',
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeValues: {
            ':v': value,
            ':now': new Date().toISOString(),
            ':shard': RUNNING_COUNTERS,
            ...(seen ? { ':seen': seen.running } : {}),
            ...(seen?.changedAt ? { ':at': seen.changedAt } : {}),
          },
        }),
      ),
    );
  }

  async remove(id: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new DeleteCommand({ TableName: this.table, Key: { id }, ConditionExpression: 'attribute_exists(deletedAt)' }),
      ),
    );
  }

  async setCommandSocket(id: string, sessionKeyHash: string, connectionId: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: 'SET commandSocket = :c',
          // The key's own sandbox, its current generation, RUNNING: a stale program cannot take the socket over.
          ConditionExpression: '#status = :running AND sessionKeyHash = :h AND attribute_not_exists(deletedAt)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':c': connectionId, ':h': sessionKeyHash, ':running': 'RUNNING' },
        }),
      ),
    );
  }

  async clearCommandSocket(id: string, connectionId: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: 'REMOVE commandSocket',
          ConditionExpression: 'commandSocket = :c',
          ExpressionAttributeValues: { ':c': connectionId },
        }),
      ),
    );
  }

  async nextCommandSeq(id: string): Promise<number | undefined> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: 'ADD commandSeq :one',
          ConditionExpression: 'attribute_exists(id) AND attribute_not_exists(deletedAt)',
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    return item?.commandSeq as number | undefined;
  }

  async putCommand(command: StoredCommand): Promise<void> {
    await this.db.send(new PutCommand({ TableName: this.commands, Item: command }));
  }

  async listCommands(sandboxId: string, limit: number): Promise<StoredCommand[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.commands,
        KeyConditionExpression: 'sandboxId = :s',
        ExpressionAttributeValues: { ':s': sandboxId },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (out.Items ?? []) as StoredCommand[];
  }

  async deleteCommand(sandboxId: string, seq: number): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.commands, Key: { sandboxId, seq } }));
  }

  async deleteAllCommands(sandboxId: string): Promise<void> {
    // Bounded: each round removes up to 100 queued commands; a queue is short-lived and small.
    for (let round = 0; round < 100; round++) {
      const batch = await this.listCommands(sandboxId, 100);
      if (!batch.length) return;
      for (let i = 0; i < batch.length; i += 25) {
        let requests = batch.slice(i, i + 25).map((c) => ({ DeleteRequest: { Key: { sandboxId, seq: c.seq } } }));
        for (let attempt = 0; requests.length && attempt < 10; attempt++) {
          const out = await this.db.send(new BatchWriteCommand({ RequestItems: { [this.commands]: requests } }));
          requests = (out.UnprocessedItems?.[this.commands] ?? []) as typeof requests;
        }
      }
    }
  }

  async getCommand(sandboxId: string, seq: number): Promise<StoredCommand | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.commands, Key: { sandboxId, seq }, ConsistentRead: true }),
    );
    return out.Item as StoredCommand | undefined;
  }

  // Replies live in the commands table under their own partition (`reply#<sandbox id>`), so the
  // queue's Query never lists them and no other table or grant is needed.
  async putReply(sandboxId: string, seq: number, body: string, at: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.commands,
          Item: { sandboxId: replyPartition(sandboxId), seq, body, createdAt: at },
          ConditionExpression: 'attribute_not_exists(seq)',
        }),
      ),
    );
  }

  async getReply(sandboxId: string, seq: number): Promise<string | undefined> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.commands,
        Key: { sandboxId: replyPartition(sandboxId), seq },
        ConsistentRead: true,
      }),
    );
    return out.Item?.body as string | undefined;
  }

  async deleteReply(sandboxId: string, seq: number): Promise<void> {
    await this.db.send(
      new DeleteCommand({ TableName: this.commands, Key: { sandboxId: replyPartition(sandboxId), seq } }),
    );
  }
}

const replyPartition = (sandboxId: string) => `reply#${sandboxId}`;
