import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTables, startDynalite, useLocalTables } from '#infra/local/dynamo.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import { DynamoConnectionStore } from '#shared/stream/dynamo-connection-store.ts';
import { PushDelivery } from '#shared/stream/push-delivery.ts';
import { eventFeedContract } from '#test/contract/event-feed.contract.ts';

/** API Gateway's @connections in memory: each open connection's messages; a closed one answers 410. */
class MemoryConnections implements ConnectionPush {
  readonly open = new Map<string, string[]>();
  async post(connectionId: string, data: string): Promise<'sent' | 'gone'> {
    await new Promise((r) => setTimeout(r, Math.random() * 3)); // sends of concurrent ingests interleave
    const received = this.open.get(connectionId);
    if (!received) return 'gone';
    received.push(data);
    return 'sent';
  }
  async isOpen(connectionId: string): Promise<boolean> {
    return this.open.has(connectionId);
  }
  async drop(connectionId: string): Promise<void> {
    this.open.delete(connectionId);
  }
}

// The AWS feed over the real stores on dynalite: a client is a connection as `$connect` records it
// and the resend step opens it; leaving is `$disconnect` (the record removed) and the socket closed.
eventFeedContract('PushDelivery (streamConnections and events on dynalite, @connections in memory)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'acs-push-'));
  const dynamo = await startDynalite(undefined, join(dir, 'db.sock'));
  useLocalTables(dynamo.endpoint, 'push-contract');
  await createTables(dynamo.endpoint, 'push-contract');
  const store = new DynamoEventStore();
  const connections = new DynamoConnectionStore();
  const push = new MemoryConnections();
  const feed = new PushDelivery(connections, store, push);
  return {
    feed,
    store,
    connect: async (conversation, after) => {
      const connectionId = `${randomUUID()}=`;
      const sentSeq = after === 'end' ? await store.lastSeq(conversation) : after;
      await connections.add({
        conversation,
        connectionId,
        sentSeq,
        connectedAt: new Date(),
        expiresAt: new Date(Date.now() + 7_200_000),
      });
      const received: string[] = [];
      push.open.set(connectionId, received);
      await feed.resend(conversation, connectionId);
      return {
        messages: () => received.map((m) => JSON.parse(m)),
        disconnect: async () => {
          push.open.delete(connectionId);
          await connections.remove(conversation, connectionId);
        },
      };
    },
    close: async () => {
      await dynamo.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
