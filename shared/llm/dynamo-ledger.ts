import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  IdempotencyClaim,
  IdempotentCall,
  LlmLedger,
  LlmRecord,
  Reservation,
  ReserveRefusal,
} from '#shared/llm/ledger.ts';
import type { SealedAnswer } from '#shared/llm/replay.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { addToDayTotals, usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import { recordExpiry, usageRetentionDays } from '#shared/usage/retention.ts';
import type { DayTotals } from '#shared/usage/usage-store.ts';
import { logger } from '#shared/logging.ts';

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

/** An open reservation as its counter item's `open` set holds it. */
export const openMember = (r: Reservation) => `${r.requestId}|${r.expiresAtEpoch}|${r.microUsd}`;

function parseMember(m: string): { expiresAtEpoch: number; microUsd: number } {
  const parts = m.split('|');
  return { expiresAtEpoch: Number(parts.at(-2)), microUsd: Number(parts.at(-1)) };
}

export class DynamoLlmLedger implements LlmLedger {
  private readonly db = documentClient();
  private readonly usage = tableName('usage');
  private readonly keys = tableName('keys');
  private readonly retentionDays = usageRetentionDays();

  /*
   * Each counter item (the organization's month, the conversation's budget) holds its open reservations
   * in a string set `open` beside the counters (`<request id>|<expiry epoch s>|<micro-USD>`), changed in
   * the same write as the counters: adding one, settling one and releasing a leaked one are each a single
   * conditional update on one item, so whoever removes a member is the one who moves its counters, once.
   */
  async reserve(
    r: Reservation,
    limits: { orgMaxMicroUsd: number; concurrency: number; conversationMaxMicroUsd: number | null },
  ): Promise<ReserveRefusal | null> {
    const orgKey = this.orgKey(r);
    const member = openMember(r);
    // A call that alone exceeds what is left is refused before any write (the conditions below see only counters).
    if (r.microUsd > limits.orgMaxMicroUsd)
      return { refused: 'monthly_spend_usd', used: await this.committed(r.orgId, r.month) };
    const conversationMax = r.conversationBudget ? limits.conversationMaxMicroUsd : null;
    if (conversationMax !== null && r.microUsd > conversationMax)
      return { refused: 'max_budget_per_task', used: await this.conversationCommitted(r.conversationId) };
    // One conditional ADD: holds under any number of racing calls (each sees the others' reservations).
    // Refused: release what leaked (expired reservations) and try once more.
    const org = await this.withRepair(orgKey, true, () =>
      conditionalWrite(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.usage,
            Key: orgKey,
            UpdateExpression: 'ADD committed :r, inflight :one, #open :m',
            ConditionExpression:
              '(attribute_not_exists(committed) OR committed <= :max) AND (attribute_not_exists(inflight) OR inflight < :cap)',
            ExpressionAttributeNames: { '#open': 'open' },
            ExpressionAttributeValues: {
              ':r': r.microUsd,
              ':one': 1,
              ':m': new Set([member]),
              ':max': limits.orgMaxMicroUsd - r.microUsd,
              ':cap': limits.concurrency,
            },
          }),
        ),
      ),
    );
    if (!org.ok) {
      const inflight = Number(org.item?.inflight ?? 0);
      return inflight >= limits.concurrency
        ? { refused: 'concurrency', used: inflight }
        : { refused: 'monthly_spend_usd', used: Number(org.item?.committed ?? 0) };
    }
    if (conversationMax === null) return null;
    const convKey = this.convKey(r);
    const conv = await this.withRepair(convKey, false, () =>
      conditionalWrite(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.usage,
            Key: convKey,
            UpdateExpression: 'ADD committed :r, #open :m',
            ConditionExpression: 'attribute_not_exists(committed) OR committed <= :max',
            ExpressionAttributeNames: { '#open': 'open' },
            ExpressionAttributeValues: {
              ':r': r.microUsd,
              ':m': new Set([member]),
              ':max': conversationMax - r.microUsd,
            },
          }),
        ),
      ),
    );
    if (conv.ok) return null;
    await this.close(orgKey, member, -r.microUsd, true);
    return { refused: 'max_budget_per_task', used: Number(conv.item?.committed ?? 0) };
  }

  /**
   * Runs the conditional write; when refused, reads the item and releases its expired open reservations
   * (each by the conditional update that removes it: racing repairers release it once), then tries once
   * more (also when another caller released them between the refusal and the read).
   */
  private async withRepair(
    Key: Record<string, string>,
    inflight: boolean,
    write: () => Promise<boolean>,
  ): Promise<{ ok: boolean; item?: Record<string, any> }> {
    if (await write()) return { ok: true };
    const read = async () =>
      (await this.db.send(new GetCommand({ TableName: this.usage, Key, ConsistentRead: true }))).Item;
    let item = await read();
    const now = Math.floor(Date.now() / 1000);
    let released = false;
    for (const m of (item?.open as Set<string> | undefined) ?? []) {
      const open = parseMember(m);
      if (open.expiresAtEpoch > now) continue;
      if (await this.close(Key, m, -open.microUsd, inflight)) {
        released = true;
        logger.warn('llm.reservation released', { key: Key.pk, reservation: m });
      }
    }
    if (await write()) return { ok: true };
    // What the refusal says (which limit, how much is used): the item as it is now.
    if (released) item = await read();
    return { ok: false, ...(item ? { item } : {}) };
  }

  /**
   * Removes an open reservation and moves the counters by `delta` (and ends its call in flight) in one
   * conditional update; false when it was no longer open (settled, or released by someone else).
   */
  private close(Key: Record<string, string>, member: string, delta: number, inflight: boolean): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.usage,
          Key,
          UpdateExpression: `ADD committed :d${inflight ? ', inflight :minus' : ''} DELETE #open :m`,
          ConditionExpression: 'contains(#open, :id)',
          ExpressionAttributeNames: { '#open': 'open' },
          ExpressionAttributeValues: {
            ':d': delta,
            ':m': new Set([member]),
            ':id': member,
            ...(inflight ? { ':minus': -1 } : {}),
          },
        }),
      ),
    );
  }

  /** The conversation's committed LLM spend (settled and reserved) against its budget, micro-USD. */
  async conversationCommitted(conversationId: string): Promise<number> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.usage,
        Key: { pk: llmKeys.conversation(conversationId), sk: 'budget' },
        ConsistentRead: true,
      }),
    );
    return Number(out.Item?.committed ?? 0);
  }

  private orgKey(r: Reservation) {
    return { pk: llmKeys.orgMonth(r.orgId), sk: `month#${r.month}` };
  }

  private convKey(r: Reservation) {
    return { pk: llmKeys.conversation(r.conversationId), sk: 'budget' };
  }

  async settle(r: Reservation, actualMicroUsd: number): Promise<void> {
    const member = openMember(r);
    // Released meanwhile as leaked (its counters already given back): the cost alone is added.
    const add = (Key: Record<string, string>) =>
      this.db.send(
        new UpdateCommand({
          TableName: this.usage,
          Key,
          UpdateExpression: 'ADD committed :m',
          ExpressionAttributeValues: { ':m': actualMicroUsd },
        }),
      );
    if (!(await this.close(this.orgKey(r), member, actualMicroUsd - r.microUsd, true))) await add(this.orgKey(r));
    // Only a conversation with a budget keeps a counter (none is written for one without).
    if (r.conversationBudget && !(await this.close(this.convKey(r), member, actualMicroUsd - r.microUsd, false)))
      await add(this.convKey(r));
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
    const orgDay = await addToDayTotals(this.db, this.usage, rec, ADD_LLM, values);
    await this.db.send(
      new UpdateCommand({
        TableName: this.usage,
        Key: { pk: usageKeys.orgModels(rec.orgId), sk: `day#${rec.day}#${rec.model}` },
        UpdateExpression: `${ADD_LLM}, model = :model`,
        ExpressionAttributeNames: { '#day': 'day' },
        ExpressionAttributeValues: { ...values, ':model': rec.model },
      }),
    );
    return orgDay;
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

  /*
   * An Idempotency-Key is one item of table `keys` (`llmidem:<conversation>:<SHA-256 of the key>`): the
   * claiming call's request id and request hash, its state, and once completed its sealed answer (a binary
   * attribute). Claimed with a conditional put, completed or released conditionally on the claiming call,
   * so a call that outlived its claim (taken for dead) changes nothing.
   */
  private idemKey(conversationId: string, key: string) {
    return { keyId: `llmidem:${conversationId}:${createHash('sha256').update(key).digest('base64url')}` };
  }

  async claimIdempotencyKey(
    conversationId: string,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotentCall | null> {
    const Key = this.idemKey(conversationId, key);
    // A released claim between our refused put and our read: the key is free, try again (twice at most).
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = Math.floor(Date.now() / 1000);
      const claimed = await conditionalWrite(() =>
        this.db.send(
          new PutCommand({
            TableName: this.keys,
            Item: { ...Key, ...claim, state: 'in_progress' },
            ConditionExpression:
              'attribute_not_exists(keyId) OR expiresAtEpoch < :now OR (#state = :progress AND inProgressUntil < :now)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':now': now, ':progress': 'in_progress' },
          }),
        ),
      );
      if (claimed) return null;
      const item = (await this.db.send(new GetCommand({ TableName: this.keys, Key, ConsistentRead: true }))).Item;
      if (!item) continue;
      return {
        requestId: String(item.requestId),
        requestHash: String(item.requestHash),
        state: item.state as IdempotentCall['state'],
        ...(item.answerKey && item.answer
          ? { answer: { key: String(item.answerKey), blob: item.answer as Uint8Array } }
          : {}),
      };
    }
    throw new Error('An Idempotency-Key kept changing under its claim');
  }

  async completeIdempotencyKey(
    conversationId: string,
    key: string,
    requestId: string,
    answer: SealedAnswer | 'too_large',
  ): Promise<void> {
    const kept = answer !== 'too_large';
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.keys,
          Key: this.idemKey(conversationId, key),
          UpdateExpression: kept
            ? 'SET #state = :s, answerKey = :k, answer = :a REMOVE inProgressUntil'
            : 'SET #state = :s REMOVE inProgressUntil',
          ConditionExpression: 'requestId = :rid AND #state = :progress',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':s': kept ? 'completed' : 'too_large',
            ':rid': requestId,
            ':progress': 'in_progress',
            ...(kept ? { ':k': answer.key, ':a': answer.blob } : {}),
          },
        }),
      ),
    );
  }

  async releaseIdempotencyKey(conversationId: string, key: string, requestId: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new DeleteCommand({
          TableName: this.keys,
          Key: this.idemKey(conversationId, key),
          ConditionExpression: 'requestId = :rid AND #state = :progress',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':rid': requestId, ':progress': 'in_progress' },
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
