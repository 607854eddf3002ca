import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTables, startDynalite, useLocalTables } from '#infra/local/dynamo.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { LocalEventHub } from '#shared/stream/local-event-hub.ts';
import { eventFeedContract } from '#test/contract/event-feed.contract.ts';

// The local hub over the real event store on dynalite; clients are subscriptions, as the gateway's socket makes them.
eventFeedContract('LocalEventHub (DynamoEventStore on dynalite)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'acs-feed-'));
  const dynamo = await startDynalite(undefined, join(dir, 'db.sock'));
  useLocalTables(dynamo.endpoint);
  await createTables(dynamo.endpoint);
  const store = new DynamoEventStore();
  const hub = new LocalEventHub(() => store);
  return {
    feed: hub,
    store,
    connect: async (conversation, after) => {
      const received: string[] = [];
      const subscription = await hub.subscribe(conversation, (end) => (after === 'end' ? end : after), {
        send: async (m) => void received.push(m),
        fail: (err) => {
          throw err;
        },
      });
      return { messages: () => received.map((m) => JSON.parse(m)), disconnect: async () => subscription.close() };
    },
    close: async () => {
      await dynamo.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
