import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { LlmLedger, LlmRecord, Reservation, ReserveRefusal } from '#shared/llm/ledger.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import { recordExpiry, usageRetentionDays } from '#shared/usage/retention.ts';
import type { DayTotals } from '#shared/usage/usage-store.ts';

/** Keys of the gateway's items (docs/data-model.md, "usage"). */
export const llmKeys = {
  record: (requestId: string) => `llm#${requestId}`,
  orgMonth: (orgId: string) => `llmorg#${orgId}`,
  conversation: (conversationId: string) => `llmconv#${conversationId}`,
};

// lastAt: the wall clock of the write, read by the daily reconcile (docs/billing.md, "The daily reconcile").
const ADD_LLM =
  'ADD llmCalls :one, llmInputTokens :i, llmOutputTokens :o, llmCachedTokens :c, llmCacheWriteTokens :w, llmMicroUsd :m SET #day = :day, lastAt = :now';

/** An LLM record as table `usage` holds it (also what the usage bench writes in bulk). */
export function llmRecordItem(rec: LlmRecord, retentionDays: number): Record<string, unknown> {
  const pk = llmKeys.record(rec.requestId);
  return {
    pk,
    sk: 'llm',
    kind: 'llm',
    recordKey: usageKeys.recordKey(rec.orgId, rec.at, pk),
    expiresAtEpoch: recordExpiry(rec.day, retentionDays),
    ...rec,
  };
}

export class DynamoLlmLedger implements LlmLedger {
  private readonly db = documentClient();
  private readonly usage = tableName('usage');
  private readonly keys = tableName('keys');
  private readonly retentionDays = usageRetentionDays();

  async reserve(
    r: Reservation,
    limits: { orgMaxMicroUsd: number; concurrency: number; conversationMaxMicroUsd: number | null },
  ): Promise<ReserveRefusal | null> {
    const orgKey = { pk: llmKeys.orgMonth(r.orgId), sk: `month#${r.month}` };
    // A call that alone exceeds what is left is refused before any write (the conditions below see only counters).
    if (r.microUsd > limits.orgMaxMicroUsd)
      return { refused: 'monthly_spend_usd', used: await this.committed(r.orgId, r.month) };
    if (limits.conversationMaxMicroUsd !== null && r.microUsd > limits.conversationMaxMicroUsd)
      return { refused: 'max_budget_per_task', used: await this.conversationCommitted(r.conversationId) };
    // One conditional ADD: holds under any number of racing calls (each sees the others' reservations).
    const org = await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.usage,
          Key: orgKey,
          UpdateExpression: 'ADD committed :r, inflight :one',
          ConditionExpression:
            '(attribute_not_exists(committed) OR committed <= :max) AND (attribute_not_exists(inflight) OR inflight < :cap)',
          ExpressionAttributeValues: {
            ':r': r.microUsd,
            ':one': 1,
            ':max': limits.orgMaxMicroUsd - r.microUsd,
            ':cap': limits.concurrency,
          },
        }),
      ),
    );
    if (!org) {
      const item = (await this.db.send(new GetCommand({ TableName: this.usage, Key: orgKey, ConsistentRead: true })))
        .Item;
      const inflight = Number(item?.inflight ?? 0);
      return inflight >= limits.concurrency
        ? { refused: 'concurrency', used: inflight }
        : { refused: 'monthly_spend_usd', used: Number(item?.committed ?? 0) };
    }
    if (limits.conversationMaxMicroUsd === null) return null;
    const conv = await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.usage,
          Key: { pk: llmKeys.conversation(r.conversationId), sk: 'budget' },
          UpdateExpression: 'ADD committed :r',
          ConditionExpression: 'attribute_not_exists(committed) OR committed <= :max',
          ExpressionAttributeValues: { ':r': r.microUsd, ':max': limits.conversationMaxMicroUsd! - r.microUsd },
        }),
      ),
    );
    if (conv) return null;
    await this.addOrg(r, -r.microUsd, -1);
    return { refused: 'max_budget_per_task', used: await this.conversationCommitted(r.conversationId) };
  }

  private async conversationCommitted(conversationId: string): Promise<number> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.conversation(conversationId), sk: 'budget' },
        ConsistentRead: true,
      }),
    );
    return Number(out.Item?.committed ?? 0);
  }

  private addOrg(r: Reservation, micro: number, inflight: number) {
    return this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.orgMonth(r.orgId), sk: `month#${r.month}` },
        UpdateExpression: 'ADD committed :m, inflight :n',
        ExpressionAttributeValues: { ':m': micro, ':n': inflight },
      }),
    );
  }

  async settle(r: Reservation, actualMicroUsd: number): Promise<void> {
    const delta = actualMicroUsd - r.microUsd;
    await this.addOrg(r, delta, -1);
    await this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.conversation(r.conversationId), sk: 'budget' },
        UpdateExpression: 'ADD committed :m',
        ExpressionAttributeValues: { ':m': delta },
      }),
    );
  }

  async committed(orgId: string, month: string): Promise<number> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.orgMonth(orgId), sk: `month#${month}` },
        ConsistentRead: true,
      }),
    );
    return Number(out.Item?.committed ?? 0);
  }

  async record(rec: LlmRecord): Promise<DayTotals | undefined> {
    const put = await conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.usage,
          Item: llmRecordItem(rec, this.retentionDays),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (!put) return undefined;
    const values = {
      ':one': 1,
      ':i': rec.input,
      ':o': rec.output,
      ':c': rec.cachedInput,
      ':w': rec.cacheWriteInput,
      ':m': rec.costMicroUsd,
      ':day': rec.day,
      ':now': new Date().toISOString(),
    };
    // Totals only after the record's own put succeeded (a repeat adds nothing), as compute records do.
    await this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: usageKeys.orgUsers(rec.orgId), sk: `day#${rec.day}#${rec.userId}` },
        UpdateExpression: `${ADD_LLM}, userId = :u, userKey = :uk`,
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: { ...values, ':u': rec.userId, ':uk': usageKeys.userKey(rec.orgId, rec.userId) },
      }),
    );
    const orgDay = await this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: usageKeys.orgDay(rec.orgId), sk: `day#${rec.day}` },
        UpdateExpression: ADD_LLM,
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: values,
        // The total after this ADD (no extra request): who crosses a threshold.
        ReturnValues: 'ALL_NEW',
      }),
    );
    await this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: usageKeys.orgModels(rec.orgId), sk: `day#${rec.day}#${rec.model}` },
        UpdateExpression: `${ADD_LLM}, model = :model`,
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: { ...values, ':model': rec.model },
      }),
    );
    return orgDay.Attributes as DayTotals;
  }

  async takeRate(
    orgId: string,
    minute: number,
    limits: { requests: number; tokens: number },
  ): Promise<'llm_requests_per_minute' | 'llm_tokens_per_minute' | null> {
    const Key = { keyId: `llmrate:${orgId}:${minute}` };
    const ok = await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.keys,
          Key,
          UpdateExpression: 'ADD requests :one SET expiresAtEpoch = :exp',
          ConditionExpression:
            '(attribute_not_exists(requests) OR requests < :rpm) AND (attribute_not_exists(tokens) OR tokens < :tpm)',
          ExpressionAttributeValues: {
            ':one': 1,
            ':rpm': limits.requests,
            ':tpm': limits.tokens,
            ':exp': (minute + 2) * 60,
          },
        }),
      ),
    );
    if (ok) return null;
    const item = (await this.db.send(new GetCommand({ TableName: this.keys, Key, ConsistentRead: true }))).Item;
    return Number(item?.requests ?? 0) >= limits.requests ? 'llm_requests_per_minute' : 'llm_tokens_per_minute';
  }

  async addRateTokens(orgId: string, minute: number, tokens: number): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.keys,
        Key: { keyId: `llmrate:${orgId}:${minute}` },
        UpdateExpression: 'ADD tokens :t SET expiresAtEpoch = :exp',
        ExpressionAttributeValues: { ':t': tokens, ':exp': (minute + 2) * 60 },
      }),
    );
  }

  claimIdempotencyKey(conversationId: string, key: string): Promise<boolean> {
    const hash = createHash('sha256').update(key).digest('base64url');
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.keys,
          Item: {
            keyId: `llmidem:${conversationId}:${hash}`,
            expiresAtEpoch: Math.floor(Date.now() / 1000) + 86_400,
          },
          ConditionExpression: 'attribute_not_exists(keyId) OR expiresAtEpoch < :now',
          ExpressionAttributeValues: { ':now': Math.floor(Date.now() / 1000) },
        }),
      ),
    );
  }

  async get(requestId: string): Promise<LlmRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.record(requestId), sk: 'llm' },
        ConsistentRead: true,
      }),
    );
    return out.Item as LlmRecord | undefined;
  }
}
