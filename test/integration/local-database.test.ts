import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchWriteItemCommand, ListTablesCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, startLocalDatabase, useLocalTables } from '#infra/local/dynamo.ts';
import { documentClient, dynamoClient, tableName } from '#shared/store/dynamo.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-localdb-'));
const saved = { ...process.env };
afterAll(() => {
  process.env = saved;
  rmSync(dataDir, { recursive: true, force: true });
});

const EVENTS = 60;
const eventItem = (seq: number) => ({
  conversationKey: { S: 'u1#c1' },
  seq: { N: String(seq) },
  event: { S: JSON.stringify({ id: `e${seq}`, kind: 'MessageEvent' }) },
});

/** The tables each database holds, by its own (unrouted) client. */
async function tablesIn(endpoint: string): Promise<string[]> {
  const client = dynamoClient(endpoint);
  try {
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
}

describe('the local databases: the events table in a dynalite of its own', () => {
  it('moves the events of a data dir from before the split into their database, once, and keeps them across restarts', async () => {
    // The layout of before: every table, the events too, in one dynalite under <data dir>/dynamodb.
    const old = await startDynalite(join(dataDir, 'dynamodb'), join(dataDir, 'dynamodb.sock'));
    await createTables(old.endpoint);
    const raw = dynamoClient(old.endpoint);
    for (let seq = 1; seq <= EVENTS; seq += 25) {
      const items = Array.from({ length: Math.min(25, EVENTS - seq + 1) }, (_, i) => eventItem(seq + i));
      await raw.send(
        new BatchWriteItemCommand({ RequestItems: { 'acs-events': items.map((Item) => ({ PutRequest: { Item } })) } }),
      );
    }
    await raw.send(
      new BatchWriteItemCommand({
        RequestItems: { 'acs-settings': [{ PutRequest: { Item: { userId: { S: 'u1' }, llm_model: { S: 'm' } } } }] },
      }),
    );
    raw.destroy();
    await old.close();

    const db = await startLocalDatabase(dataDir);
    try {
      expect(await tablesIn(db.endpoint)).not.toContain('acs-events');
      expect(await tablesIn(db.endpoint)).toContain('acs-settings');
      expect(await tablesIn(db.eventsEndpoint)).toEqual(['acs-events']);
      const events = dynamoClient(db.eventsEndpoint);
      expect((await events.send(new ScanCommand({ TableName: 'acs-events', Select: 'COUNT' }))).Count).toBe(EVENTS);
      events.destroy();

      // The stores' one client reaches each table in its own database.
      useLocalTables(db.endpoint, 'acs', db.eventsEndpoint);
      const page = await documentClient().send(
        new QueryCommand({
          TableName: tableName('events'),
          KeyConditionExpression: 'conversationKey = :c',
          ExpressionAttributeValues: { ':c': 'u1#c1' },
        }),
      );
      expect(page.Items?.map((i) => i.seq)).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));
      const settings = await documentClient().send(
        new GetCommand({ TableName: tableName('settings'), Key: { userId: 'u1' } }),
      );
      expect(settings.Item?.llm_model).toBe('m');
      await documentClient().send(
        new PutCommand({ TableName: tableName('events'), Item: { conversationKey: 'u1#c2', seq: 1, event: '{}' } }),
      );
    } finally {
      await db.close();
    }

    // Again from disk: nothing left to move, the events (the new one too) where they were.
    const again = await startLocalDatabase(dataDir);
    try {
      expect(await tablesIn(again.endpoint)).not.toContain('acs-events');
      const events = dynamoClient(again.eventsEndpoint);
      expect((await events.send(new ScanCommand({ TableName: 'acs-events', Select: 'COUNT' }))).Count).toBe(EVENTS + 1);
      events.destroy();
    } finally {
      await again.close();
    }
  });

  it('refuses a request that names the events table and another (no database holds both)', async () => {
    const db = await startLocalDatabase(mkdtempSync(join(dataDir, 'mixed-')), true);
    try {
      useLocalTables(db.endpoint, 'acs', db.eventsEndpoint);
      const mixed = new BatchGetCommand({
        RequestItems: {
          [tableName('events')]: { Keys: [{ conversationKey: 'u1#c1', seq: 1 }] },
          [tableName('settings')]: { Keys: [{ userId: 'u1' }] },
        },
      });
      await expect(documentClient().send(mixed)).rejects.toThrow(/events table and another/);
    } finally {
      await db.close();
    }
  });
});
