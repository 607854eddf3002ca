import { GetCommand, paginateScan, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { OrgEventBytes } from '#shared/events/org-bytes.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { batchGet } from '#shared/store/query.ts';

/** A conversation's counter item in its events partition (shared/events/dynamo-event-store.ts). */
const COUNTER = 0;
/**
 * The partition of an organization's stored event bytes (the sweeper's sum). A conversation's is
 * `<user id>#<conversation id>` with a hex conversation id: the two never meet.
 */
const orgBytesKey = (orgId: string) => `#orgbytes#${orgId}`;

/**
 * The sweeper's sum of stored event bytes per organization, over the counters ingest marks in index
 * `grownBytes` (docs/data-model.md, "events"). A module of its own: only the sweeper carries it.
 */
export class DynamoOrgEventBytes implements OrgEventBytes {
  private readonly db = documentClient();
  private readonly table = tableName('events');

  async sweep(maxConversations = 2000): Promise<{ conversations: number; organizations: number }> {
    // Index `grownBytes` holds only the counters that grew since their last sum: a Scan of it costs what grew.
    const grown = new Map<string, string[]>();
    let seen = 0;
    const pages = paginateScan(
      { client: this.db, pageSize: 500 },
      { TableName: this.table, IndexName: 'grownBytes', ProjectionExpression: 'bytesOrg, conversationKey' },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const orgId = item.bytesOrg as string;
        grown.set(orgId, [...(grown.get(orgId) ?? []), item.conversationKey as string]);
        seen++;
      }
      if (seen >= maxConversations) break;
    }
    for (const [orgId, keys] of grown) await this.sumOrgBytes(orgId, keys);
    return { conversations: seen, organizations: grown.size };
  }

  /**
   * Adds what each grown counter stored since its last sum (`bytes - bytesSwept`) to the organization's
   * total, and writes that total on each counter, where ingest reads it. The counters are written first
   * (`bytesSwept` conditioned on the value read, so overlapping sweeps cannot both count a growth), then
   * the total once: a crash between leaves the total short by this sweep's growth (the cap then errs
   * toward letting through, never toward refusing what is not stored).
   */
  private async sumOrgBytes(orgId: string, keys: string[]): Promise<void> {
    const totalKey = { conversationKey: orgBytesKey(orgId), seq: COUNTER };
    const [totalItem, counters] = await Promise.all([
      this.db.send(new GetCommand({ TableName: this.table, Key: totalKey, ConsistentRead: true })),
      batchGet<{ bytes?: number; bytesSwept?: number }>(this.table, 'conversationKey', keys, (k) => ({
        conversationKey: k,
        seq: COUNTER,
      })),
    ]);
    const grown = [...counters].map(([key, c]) => ({
      key,
      bytes: c.bytes ?? 0,
      swept: c.bytesSwept,
      delta: (c.bytes ?? 0) - (c.bytesSwept ?? 0),
    }));
    const total = ((totalItem.Item?.bytes as number | undefined) ?? 0) + grown.reduce((n, g) => n + g.delta, 0);
    let added = 0;
    for (const g of grown) {
      const swept = g.swept === undefined ? 'attribute_not_exists(bytesSwept)' : 'bytesSwept = :swept';
      const write = (done: boolean) =>
        conditionalWrite(() =>
          this.db.send(
            new UpdateCommand({
              TableName: this.table,
              Key: { conversationKey: g.key, seq: COUNTER },
              // Out of the index only when nothing was stored since the read; else it stays for the next sweep.
              UpdateExpression: `SET bytesSwept = :bytes, orgBytes = :total${done ? ' REMOVE bytesOrg' : ''}`,
              ConditionExpression: done ? `${swept} AND bytes = :bytes` : swept,
              ExpressionAttributeValues: {
                ':bytes': g.bytes,
                ':total': total,
                ...(g.swept === undefined ? {} : { ':swept': g.swept }),
              },
            }),
          ),
        );
      if ((await write(true)) || (await write(false))) added += g.delta;
    }
    if (added !== 0)
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: totalKey,
          UpdateExpression: 'ADD bytes :added',
          ExpressionAttributeValues: { ':added': added },
        }),
      );
  }
}
