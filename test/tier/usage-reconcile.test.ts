import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { OPERATOR_KEY } from '#test/tier/aws.ts';
import { createKey, startSandbox, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { REGION } from '#test/tier/template.ts';

/*
 * The daily usage reconcile as deployed (test/tier/README.md): its schedule invokes its bundle with the
 * schedule's role, and the function, with only the template's environment and its own role, reads
 * the day's records through index `byDay`, the counters through the `counters` indexes, and writes
 * the totals a writer that died between its two writes left short.
 */
let tier: TierStack;
let db: DynamoDBDocumentClient;

beforeAll(async () => {
  tier = await startTier();
  db = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: REGION,
      endpoint: tier.aws.url,
      credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
    }),
  );
}, 120_000);
afterAll(async () => {
  await tier?.stop();
});

describe('the usage reconcile through its schedule', () => {
  it('repairs yesterday totals from their records, with the function role only', async () => {
    const usage = tier.outputs.UsageTableName!;
    expect(usage).toBeTruthy();
    // Yesterday (UTC): one of the two days the scheduled run looks at.
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const orgId = 'org_tier_reconcile';
    // Two compute records whose writers died before their totals (written to the table directly).
    for (const [i, seconds] of [60, 45].entries()) {
      const from = `${day}T10:0${i}:00.000Z`;
      const pk = `sbx#tier${i}#1`;
      await db.send(
        new PutCommand({
          TableName: usage,
          Item: {
            pk,
            sk: from,
            kind: 'compute',
            recordKey: `${orgId}#${from}#${pk}`,
            sandboxId: `tier${i}`,
            generation: 1,
            orgId,
            userId: 'tier-user',
            specId: 'default',
            day,
            from,
            to: new Date(Date.parse(from) + seconds * 1000).toISOString(),
            seconds,
            factorSeconds: seconds,
            vcpuSeconds: seconds,
            gbSeconds: seconds * 2,
            computeMicroUsd: seconds * 10,
            cpuUnits: 1024,
            memoryMiB: 2048,
            resourceFactor: 1,
            price: { region: 'us-east-1', spot: false, vcpu_hour_usd: '0.04048', gb_hour_usd: '0.004445' },
            recordedAt: `${day}T10:0${i}:30.000Z`,
          },
        }),
      );
    }
    const run = await tier.bus.runSchedule('UsageReconcile');
    expect(run.target).toMatch(/reconcile/i);
    expect(run.result.error, JSON.stringify(run.result)).toBeUndefined();
    expect(run.result.ok).toBe(true);
    const summary = (run.result as { body?: unknown; payload?: unknown }).body ?? run.result;
    expect(JSON.stringify(summary)).toContain(day);
    const total = async (pk: string, sk: string) =>
      (await db.send(new GetCommand({ TableName: usage, Key: { pk, sk }, ConsistentRead: true }))).Item;
    expect(await total(`org#${orgId}`, `day#${day}`)).toMatchObject({
      seconds: 105,
      vcpuSeconds: 105,
      gbSeconds: 210,
      computeMicroUsd: 1050,
      records: 2,
    });
    expect(await total(`orgusers#${orgId}`, `day#${day}#tier-user`)).toMatchObject({
      seconds: 105,
      records: 2,
      userKey: `${orgId}#tier-user`,
    });
    // Records expire by the table's TTL (docs/billing.md, "Retention"); the totals written here carry none.
    expect(Object.entries(tier.ttl).find(([name]) => name.includes('usage'))?.[1]).toBe('expiresAtEpoch');
    expect(await total(`org#${orgId}`, `day#${day}`)).not.toHaveProperty('expiresAtEpoch');
    expect(tier.aws.denials).toEqual([]);
  }, 120_000);

  it('a pause through the deployed pause bundle writes the closing record (its own role, the template env)', async () => {
    const key = await createKey(tier, 'closer');
    const sb = await startSandbox(tier, key);
    const records = async () =>
      (
        await db.send(
          new QueryCommand({
            TableName: tier.outputs.UsageTableName!,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': `sbx#${sb.id}#1` },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [];
    // Past its check-in by more than a second: the pause has something to bill.
    await new Promise((r) => setTimeout(r, 1_500));
    const pausedFrom = Date.now();
    expect((await tier.call('POST', `/api/v1/sandboxes/${sb.id}/pause`, { key })).status).toBe(200);
    const ledger = await until(tier, 'the closing record', records, (items) => items.length > 0);
    const last = ledger.at(-1)!;
    expect(last.seconds).toBeGreaterThanOrEqual(1);
    // The ledger reaches the pause (whole seconds: under a second short of it).
    expect(Date.parse(last.to as string)).toBeGreaterThan(pausedFrom - 1_000);
    expect(last.expiresAtEpoch).toBeGreaterThan(Date.now() / 1000);
    expect(tier.aws.denials).toEqual([]);
    await tier.bus.settle();
  }, 120_000);
});
