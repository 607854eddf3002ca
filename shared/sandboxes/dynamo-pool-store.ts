import {
  BatchGetCommand,
  type BatchGetCommandInput,
  type BatchGetCommandOutput,
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  poolRecordId,
  type PoolRecord,
  type PoolStore,
  type StandbyPatch,
  type StandbyRecord,
  SUSPENDED_DETAIL,
} from '#shared/sandboxes/pool-store.ts';
import { conditionalReturn, conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';

export class DynamoPoolStore implements PoolStore {
  private readonly db = documentClient();
  private readonly table = tableName('pool');

  async createStandby(record: StandbyRecord): Promise<void> {
    await this.db.send(
      new PutCommand({ TableName: this.table, Item: record, ConditionExpression: 'attribute_not_exists(id)' }),
    );
  }

  async getStandby(id: string): Promise<StandbyRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { id }, ConsistentRead: true }));
    return out.Item?.poolSpec ? (out.Item as StandbyRecord) : undefined;
  }

  listStandbys(specId: string): Promise<StandbyRecord[]> {
    return queryAll({
      TableName: this.table,
      IndexName: 'bySpec',
      KeyConditionExpression: 'poolSpec = :s',
      ExpressionAttributeValues: { ':s': specId },
    });
  }

  async updateStandby(
    id: string,
    expectedVersion: number | undefined,
    patch: StandbyPatch,
    claimable?: { heardAfter: string },
  ): Promise<StandbyRecord | undefined> {
    const names: Record<string, string> = { '#version': 'version', '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':one': 1, ':now': new Date().toISOString() };
    const sets = ['#version = #version + :one', '#updatedAt = :now'];
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
    const conditions = ['attribute_exists(poolSpec)'];
    if (expectedVersion !== undefined) {
      values[':expected'] = expectedVersion;
      conditions.push('#version = :expected');
    }
    if (claimable) {
      names['#status'] = 'status';
      values[':ready'] = 'ready';
      values[':heard'] = claimable.heardAfter;
      conditions.push('#status = :ready', 'heartbeatAt > :heard');
    }
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item as StandbyRecord | undefined;
  }

  async deliverBinding(id: string): Promise<StandbyRecord | undefined> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: 'SET #status = :delivered, #version = #version + :one, updatedAt = :now REMOVE tokenHash',
          ConditionExpression: 'attribute_exists(poolSpec) AND #status = :claimed AND attribute_exists(binding)',
          ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
          ExpressionAttributeValues: {
            ':delivered': 'delivered',
            ':claimed': 'claimed',
            ':one': 1,
            ':now': new Date().toISOString(),
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item as StandbyRecord | undefined;
  }

  heartbeat(id: string, at: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: 'SET heartbeatAt = :at',
          ConditionExpression: '#status = :ready',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':at': at, ':ready': 'ready' },
        }),
      ),
    );
  }

  async removeStandby(id: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { id } }));
  }

  async getPool(specId: string): Promise<PoolRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { id: poolRecordId(specId) }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    // Each place is a top-level attribute `slot<n>` (a map would have to exist before its first entry).
    const { ...record } = out.Item as PoolRecord & Record<string, unknown>;
    const slots: Record<string, string> = {};
    for (const [name, value] of Object.entries(record)) {
      const n = /^slot(\d+)$/.exec(name)?.[1];
      if (n === undefined) continue;
      slots[n] = value as string;
      delete record[name];
    }
    return { ...record, slots };
  }

  async takeSlot(specId: string, slot: number, from: string | undefined, to: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: poolRecordId(specId) },
          UpdateExpression: 'SET #slot = :to',
          ConditionExpression:
            from === undefined ? 'attribute_exists(id) AND attribute_not_exists(#slot)' : '#slot = :from',
          ExpressionAttributeNames: { '#slot': `slot${slot}` },
          ExpressionAttributeValues: { ':to': to, ...(from === undefined ? {} : { ':from': from }) },
        }),
      ),
    );
  }

  async touchPool(specId: string, at: string, bridgeUrl: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: poolRecordId(specId) },
          UpdateExpression: 'SET specId = :s, lastStartAt = :at, bridgeUrl = :u',
          ConditionExpression: 'attribute_not_exists(lastStartAt) OR lastStartAt < :at',
          ExpressionAttributeValues: { ':s': specId, ':at': at, ':u': bridgeUrl },
        }),
      ),
    );
  }

  async suspension(userId: string, orgId: string | undefined): Promise<string | undefined> {
    const users = tableName('users');
    const orgs = tableName('orgs');
    const status = { ProjectionExpression: '#s', ExpressionAttributeNames: { '#s': 'status' }, ConsistentRead: true };
    let request: BatchGetCommandInput['RequestItems'] = {
      [users]: { ...status, Keys: [{ userId }] },
      ...(orgId ? { [orgs]: { ...status, Keys: [{ orgId }] } } : {}),
    };
    const found: { user?: string; org?: string } = {};
    // BatchGetItem may leave keys unprocessed (throttling): asked again, a few times, then it throws.
    for (let attempt = 0; request && Object.keys(request).length; attempt++) {
      if (attempt === 5) throw new Error("The account's status could not be read");
      const out: BatchGetCommandOutput = await this.db.send(new BatchGetCommand({ RequestItems: request }));
      for (const item of out.Responses?.[users] ?? []) found.user = item.status as string;
      for (const item of out.Responses?.[orgs] ?? []) found.org = item.status as string;
      request = out.UnprocessedKeys;
    }
    if (found.user === 'suspended') return SUSPENDED_DETAIL.user;
    if (found.org === 'suspended') return SUSPENDED_DETAIL.org;
    return undefined;
  }
}
