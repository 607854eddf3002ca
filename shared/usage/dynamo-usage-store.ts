import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';
import { recordExpiry, usageRetentionDays } from '#shared/usage/retention.ts';
import type {
  ComputeRecord,
  CorrectionRecord,
  CreditAccount,
  StorageHolding,
  StorageRecord,
  DayTotals,
  TotalsDelta,
  TotalsKey,
  UsageAmounts,
  UsageNotice,
  UsageRecord,
  UsageStore,
} from '#shared/usage/usage-store.ts';

/**
 * Adds a record's amounts to its day's totals: the user's (when the record names one), then the
 * organization's, whose new values are returned (no extra request: who crosses a threshold,
 * shared/usage/alerts.ts). Called only after the record's own conditional write succeeded, so a repeat
 * adds nothing; a crash between these writes leaves a total short of its records until the daily
 * reconcile (shared/usage/reconcile.ts). `update` names the day `#day`.
 */
export async function addToDayTotals(
  db: DynamoDBDocumentClient,
  table: string,
  at: { orgId: string; userId: string | null; day: string },
  update: string,
  values: Record<string, unknown>,
): Promise<DayTotals> {
  if (at.userId !== null)
    await db.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: usageKeys.orgUsers(at.orgId), sk: `day#${at.day}#${at.userId}` },
        UpdateExpression: `${update}, userId = :u, userKey = :uk`,
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: { ...values, ':u': at.userId, ':uk': usageKeys.userKey(at.orgId, at.userId) },
      }),
    );
  const out = await db.send(
    new UpdateCommand({
      TableName: table,
      Key: { pk: usageKeys.orgDay(at.orgId), sk: `day#${at.day}` },
      UpdateExpression: update,
      ExpressionAttributeNames: { '#day': 'day' },
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }),
  );
  return out.Attributes as DayTotals;
}

/** Keys of table `usage` (docs/data-model.md, "usage"). */
export const usageKeys = {
  compute: (sandboxId: string, generation: number) => `sbx#${sandboxId}#${generation}`,
  orgDay: (orgId: string) => `org#${orgId}`,
  orgUsers: (orgId: string) => `orgusers#${orgId}`,
  /** Platform-LLM totals per (organization, day, model), written by the LLM gateway. */
  orgModels: (orgId: string) => `orgmodels#${orgId}`,
  userKey: (orgId: string, userId: string) => `${orgId}#${userId}`,
  /** Index `byDay`'s sort key, carried by records only (never by totals): organization, then time. */
  recordKey: (orgId: string, start: string, pk: string) => `${orgId}#${start}#${pk}`,
  /** A prepaid organization's grants (sk `account`). */
  credits: (orgId: string) => `credits#${orgId}`,
  /** 80% / 100% notices (sk `<period>#<limit>#<threshold>`). */
  notices: (orgId: string) => `notice#${orgId}`,
  /** An organization's corrections (sk the correction's id). */
  corrections: (orgId: string) => `corr#${orgId}`,
  /** A sandbox's storage records (sk the interval's start). */
  storage: (sandboxId: string) => `stor#${sandboxId}`,
  /** Every sandbox's storage holding, one partition (sk the sandbox id). */
  holdings: 'storheld',
  /** The agent's last report of a conversation's LLM usage (sk `latest`). */
  agentConversation: (userId: string, conversationId: string) => `agentconv#${userId}#${conversationId}`,
};

// lastAt: the wall clock of the write, read by the daily reconcile (docs/billing.md, "The daily reconcile").
const ADD_TOTALS =
  'ADD seconds :s, factorSeconds :f, vcpuSeconds :v, gbSeconds :g, computeMicroUsd :c, records :one SET #day = :day, lastAt = :now';

/** A compute record as table `usage` holds it (also what the usage bench writes in bulk). */
export function computeRecordItem(r: ComputeRecord, retentionDays: number): Record<string, unknown> {
  const pk = usageKeys.compute(r.sandboxId, r.generation);
  return {
    pk,
    sk: r.from,
    kind: 'compute',
    recordKey: usageKeys.recordKey(r.orgId, r.from, pk),
    expiresAtEpoch: recordExpiry(r.day, retentionDays),
    ...r,
  };
}

// Storage records add to their own members (and `storageRecords`, which the reconcile's repair condition reads).
const ADD_STORAGE =
  'ADD storageMibSeconds :ms, storageMicroUsd :sc, storageRecords :one SET #day = :day, lastAt = :now';

/** A storage record as table `usage` holds it. */
export function storageRecordItem(r: StorageRecord, retentionDays: number): Record<string, unknown> {
  const pk = usageKeys.storage(r.sandboxId);
  return {
    pk,
    sk: r.from,
    kind: 'storage',
    recordKey: usageKeys.recordKey(r.orgId, r.from, pk),
    expiresAtEpoch: recordExpiry(r.day, retentionDays),
    ...r,
  };
}

export class DynamoUsageStore implements UsageStore {
  private readonly db = documentClient();
  private readonly table = tableName('usage');
  private readonly retentionDays = usageRetentionDays();

  async lastComputeEnd(sandboxId: string, generation: number): Promise<string | undefined> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': usageKeys.compute(sandboxId, generation) },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const last = out.Items?.[0];
    return (last?.unbilledUntil ?? last?.to) as string | undefined;
  }

  async recordCorrection(r: CorrectionRecord): Promise<boolean> {
    const pk = usageKeys.corrections(r.orgId);
    const put = await conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          // Listed by index byDay under the day it applies to (the export and the reconcile read it there);
          // kept with the ledger's records' retention, counted from that day.
          Item: {
            pk,
            sk: r.id,
            kind: 'correction',
            recordKey: usageKeys.recordKey(r.orgId, r.at, pk),
            expiresAtEpoch: recordExpiry(r.day, this.retentionDays),
            ...r,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (!put) return false;
    const values = { ':n': 1, ':c': r.microUsd, ':day': r.day, ':now': new Date().toISOString() };
    const update = 'ADD corrections :n, correctionMicroUsd :c SET #day = :day, lastAt = :now';
    await addToDayTotals(this.db, this.table, r, update, values);
    return true;
  }

  async recordCompute(r: ComputeRecord): Promise<DayTotals | undefined> {
    const put = await conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: computeRecordItem(r, this.retentionDays),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (!put) return undefined;
    const values = {
      ':s': r.seconds,
      ':f': r.factorSeconds,
      ':v': r.vcpuSeconds,
      ':g': r.gbSeconds,
      ':c': r.computeMicroUsd,
      ':one': 1,
      ':day': r.day,
      ':now': new Date().toISOString(),
    };
    return addToDayTotals(this.db, this.table, r, ADD_TOTALS, values);
  }

  orgDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]> {
    return queryAll<DayTotals>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      ExpressionAttributeValues: { ':pk': usageKeys.orgDay(orgId), ':a': `day#${fromDay}`, ':b': `day#${toDay}` },
    });
  }

  userDays(orgId: string, userId: string, fromDay: string, toDay: string): Promise<DayTotals[]> {
    return queryAll<DayTotals>({
      TableName: this.table,
      IndexName: 'byUser',
      KeyConditionExpression: 'userKey = :k AND #day BETWEEN :a AND :b',
      ExpressionAttributeNames: { '#day': 'day' },
      ExpressionAttributeValues: { ':k': usageKeys.userKey(orgId, userId), ':a': fromDay, ':b': toDay },
    });
  }

  orgUserDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]> {
    return queryAll<DayTotals>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      // `~` sorts after every user id character: the whole of `toDay`.
      ExpressionAttributeValues: { ':pk': usageKeys.orgUsers(orgId), ':a': `day#${fromDay}`, ':b': `day#${toDay}#~` },
    });
  }

  orgModelDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]> {
    return queryAll<DayTotals>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      // Written by the LLM gateway (shared/llm/dynamo-ledger.ts): sk `day#<day>#<model>`.
      ExpressionAttributeValues: { ':pk': usageKeys.orgModels(orgId), ':a': `day#${fromDay}`, ':b': `day#${toDay}#~` },
    });
  }

  async monthOf(orgId: string, day: string): Promise<UsageAmounts & { llmMicroUsd: number }> {
    const month = day.slice(0, 7);
    const sum: UsageAmounts & { llmMicroUsd: number } = {
      seconds: 0,
      factorSeconds: 0,
      vcpuSeconds: 0,
      gbSeconds: 0,
      computeMicroUsd: 0,
      llmMicroUsd: 0,
    };
    for (const d of await this.orgDays(orgId, `${month}-01`, `${month}-31`))
      for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += Number(d[k] ?? 0);
    return sum;
  }

  async *dayRecords(day: string, orgId?: string): AsyncGenerator<UsageRecord[]> {
    const pages = paginateQuery(
      { client: this.db, pageSize: 500 },
      {
        TableName: this.table,
        IndexName: 'byDay',
        KeyConditionExpression: orgId ? '#day = :d AND begins_with(recordKey, :o)' : '#day = :d',
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: { ':d': day, ...(orgId ? { ':o': `${orgId}#` } : {}) },
      },
    );
    for await (const page of pages) yield (page.Items ?? []) as UsageRecord[];
  }

  repairTotals(key: TotalsKey, seen: DayTotals | undefined, delta: TotalsDelta): Promise<boolean> {
    const names: Record<string, string> = { '#day': 'day' };
    const values: Record<string, unknown> = { ':day': key.day };
    const adds = Object.entries(delta)
      .filter(([, v]) => v)
      .map(([field, v], i) => {
        names[`#f${i}`] = field;
        values[`:f${i}`] = v;
        return `#f${i} :f${i}`;
      });
    const sets = ['#day = :day'];
    if (key.userId !== undefined) {
      sets.push('userId = :u', 'userKey = :uk');
      Object.assign(values, { ':u': key.userId, ':uk': usageKeys.userKey(key.orgId, key.userId) });
    }
    if (key.model !== undefined) {
      sets.push('model = :model');
      values[':model'] = key.model;
    }
    // Every writer ADDs 1 to `records` (compute), `llmCalls` (LLM), `storageRecords` (storage) or `corrections`: unchanged
    // counts mean no writer came between.
    const conditions = seen
      ? (['records', 'llmCalls', 'storageRecords', 'corrections'] as const).map((f) => {
          if (seen[f] === undefined) return `attribute_not_exists(${f})`;
          values[`:seen_${f}`] = seen[f];
          return `${f} = :seen_${f}`;
        })
      : ['attribute_not_exists(pk)'];
    const pk =
      key.userId !== undefined
        ? usageKeys.orgUsers(key.orgId)
        : key.model !== undefined
          ? usageKeys.orgModels(key.orgId)
          : usageKeys.orgDay(key.orgId);
    const sk = `day#${key.day}${key.userId !== undefined ? `#${key.userId}` : key.model !== undefined ? `#${key.model}` : ''}`;
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk, sk },
          UpdateExpression: `${adds.length ? `ADD ${adds.join(', ')} ` : ''}SET ${sets.join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  async storageHolding(sandboxId: string): Promise<StorageHolding | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { pk: usageKeys.holdings, sk: sandboxId }, ConsistentRead: true }),
    );
    return out.Item as StorageHolding | undefined;
  }

  moveHolding(sandboxId: string, seen: StorageHolding | undefined, next: StorageHolding | null): Promise<boolean> {
    const Key = { pk: usageKeys.holdings, sk: sandboxId };
    const condition = seen
      ? { ConditionExpression: 'since = :since', ExpressionAttributeValues: { ':since': seen.since } }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    return conditionalWrite(() =>
      next
        ? this.db.send(
            new PutCommand({ TableName: this.table, Item: { ...Key, kind: 'holding', ...next }, ...condition }),
          )
        : this.db.send(new DeleteCommand({ TableName: this.table, Key, ...condition })),
    );
  }

  async recordStorage(r: StorageRecord): Promise<boolean> {
    const put = await conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: storageRecordItem(r, this.retentionDays),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (!put) return false;
    const values = {
      ':ms': r.mibSeconds,
      ':sc': r.storageMicroUsd,
      ':one': 1,
      ':day': r.day,
      ':now': new Date().toISOString(),
    };
    await addToDayTotals(this.db, this.table, r, ADD_STORAGE, values);
    return true;
  }

  computeRecords(sandboxId: string, generation: number): Promise<ComputeRecord[]> {
    return queryAll<ComputeRecord>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': usageKeys.compute(sandboxId, generation) },
      ConsistentRead: true,
    });
  }

  async credits(orgId: string): Promise<CreditAccount | undefined> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: usageKeys.credits(orgId), sk: 'account' },
        ConsistentRead: true,
      }),
    );
    return out.Item ? account(out.Item) : undefined;
  }

  async grantCredits(orgId: string, microUsd: number, day: string, openingMicroUsd: number): Promise<CreditAccount> {
    const out = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: usageKeys.credits(orgId), sk: 'account' },
        UpdateExpression:
          'ADD grantedMicroUsd :m, grants :one SET since = if_not_exists(since, :day), openingMicroUsd = if_not_exists(openingMicroUsd, :open)',
        ExpressionAttributeValues: { ':m': microUsd, ':one': 1, ':day': day, ':open': openingMicroUsd },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return account(out.Attributes!);
  }

  claimNotice(n: UsageNotice): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: usageKeys.notices(n.orgId), sk: noticeSk(n), kind: 'notice', ...n },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async notices(orgId: string, limit: number, after?: string): Promise<{ items: UsageNotice[]; last?: string }> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': usageKeys.notices(orgId) },
        ScanIndexForward: false,
        Limit: limit,
        ...(after ? { ExclusiveStartKey: { pk: usageKeys.notices(orgId), sk: after } } : {}),
      }),
    );
    const items = (out.Items ?? []).map(({ pk: _pk, sk: _sk, kind: _kind, ...n }) => n as UsageNotice);
    return { items, ...(out.LastEvaluatedKey ? { last: out.LastEvaluatedKey.sk as string } : {}) };
  }
}

/** `<period>#<limit>#<threshold>`, the threshold as 3 digits: within a period, 100% sorts (newest first) before 80%. */
const noticeSk = (n: Pick<UsageNotice, 'period' | 'limit' | 'threshold'>) =>
  `${n.period}#${n.limit}#${String(n.threshold).padStart(3, '0')}`;

const account = (item: Record<string, unknown>): CreditAccount => ({
  grantedMicroUsd: Number(item.grantedMicroUsd ?? 0),
  since: String(item.since),
  openingMicroUsd: Number(item.openingMicroUsd ?? 0),
  grants: Number(item.grants ?? 0),
});
