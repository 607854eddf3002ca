import { BatchWriteCommand, DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { UserRecord } from '#shared/accounts/model.ts';
import type { TableKey } from '#shared/store/tables.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryPage } from '#shared/store/query.ts';

/**
 * The deletion of a person's data after `DELETE /api/v1/users/me` (docs/sign-in.md, "Export and
 * deletion"): every item of theirs, a bounded number per call, so the daily run finishes a large
 * account over several runs. An adapter of its own, so only the usage reconcile's bundle carries it.
 */
export interface AccountPurgeStore {
  /** Up to `limit` people marked for deletion and not yet purged (the sparse index `purging`). */
  purging(limit: number): Promise<UserRecord[]>;
  /**
   * Deletes up to `max` items of the person's: events (whole conversations' partitions), then their
   * conversation items (live, deleted and the counter), start tasks, key items and settings.
   * Returns how many it deleted and whether anything is left.
   */
  deleteSome(userId: string, max: number): Promise<{ deleted: number; more: boolean }>;
  /** The person's tombstone: no email, issuer or subject any more, out of `purging`; the id stays taken. */
  markPurged(user: UserRecord, at: string): Promise<boolean>;
}

type Key = Record<string, unknown>;

export class DynamoAccountPurgeStore implements AccountPurgeStore {
  private readonly db = documentClient();

  async purging(limit: number): Promise<UserRecord[]> {
    const page = await queryPage<UserRecord>({
      TableName: tableName('users'),
      IndexName: 'purging',
      KeyConditionExpression: 'purgeShard = :p',
      ExpressionAttributeValues: { ':p': 'users' },
      Limit: limit,
    });
    return page.items;
  }

  async deleteSome(userId: string, max: number): Promise<{ deleted: number; more: boolean }> {
    let deleted = 0;
    // Conversations first: each one's events, then its item (a deleted conversation's events are still stored).
    while (deleted < max) {
      const convs = await this.keys('conversations', 'userId = :u', { ':u': userId }, ['userId', 'id'], 25);
      if (!convs.length) break;
      for (const c of convs) {
        const id = c.id as string;
        if (!id.startsWith('#')) {
          const partition = `${userId}#${id}`;
          for (;;) {
            const events = await this.keys(
              'events',
              'conversationKey = :c',
              { ':c': partition },
              ['conversationKey', 'seq'],
              Math.min(100, max - deleted),
            );
            if (!events.length) break;
            await this.remove('events', events);
            deleted += events.length;
            if (deleted >= max) return { deleted, more: true };
          }
        }
        await this.remove('conversations', [{ userId, id }]);
        deleted++;
        if (deleted >= max) return { deleted, more: true };
      }
    }
    if (deleted >= max) return { deleted, more: true };
    // Then start tasks (they hold the first message), key items (revoked already) and settings.
    for (const [table, pk, keyNames] of [
      ['startTasks', 'userId', ['id']],
      ['keys', 'userId', ['keyId']],
    ] as const) {
      for (;;) {
        const items = await this.keys(
          table,
          `${pk} = :u`,
          { ':u': userId },
          keyNames,
          Math.min(25, max - deleted),
          'byUser',
        );
        if (!items.length) break;
        await this.remove(table, items);
        deleted += items.length;
        if (deleted >= max) return { deleted, more: true };
      }
    }
    if (deleted >= max) return { deleted, more: true };
    await this.db.send(new DeleteCommand({ TableName: tableName('settings'), Key: { userId } }));
    return { deleted: deleted + 1, more: false };
  }

  markPurged(user: UserRecord, at: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: tableName('users'),
          Key: { userId: user.userId },
          UpdateExpression:
            'SET purgedAt = :at, updatedAt = :at, version = version + :one REMOVE purgeShard, email, emailVerified, issuer, #sub',
          ConditionExpression: '#s = :deleted AND attribute_not_exists(purgedAt)',
          ExpressionAttributeNames: { '#s': 'status', '#sub': 'sub' },
          ExpressionAttributeValues: { ':at': at, ':one': 1, ':deleted': 'deleted' },
        }),
      ),
    );
  }

  /** Up to `limit` items' keys (the table's key attributes only). */
  private async keys(
    table: TableKey,
    condition: string,
    values: Record<string, unknown>,
    keyNames: readonly string[],
    limit: number,
    index?: string,
  ): Promise<Key[]> {
    const page = await queryPage<Key>({
      TableName: tableName(table),
      ...(index ? { IndexName: index } : {}),
      KeyConditionExpression: condition,
      ExpressionAttributeValues: values,
      ProjectionExpression: keyNames.map((_, i) => `#k${i}`).join(', '),
      ExpressionAttributeNames: Object.fromEntries(keyNames.map((k, i) => [`#k${i}`, k])),
      Limit: limit,
    });
    return page.items.map((item) => Object.fromEntries(keyNames.map((k) => [k, item[k]])));
  }

  /** BatchWriteItem deletes, 25 at a time, retrying what DynamoDB left unprocessed. */
  private async remove(table: TableKey, keys: Key[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 25) {
      let requests: Record<string, unknown>[] = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length && attempt < 8; attempt++) {
        if (attempt) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        const out = await this.db.send(new BatchWriteCommand({ RequestItems: { [tableName(table)]: requests } }));
        requests = (out.UnprocessedItems?.[tableName(table)] ?? []) as Record<string, unknown>[];
      }
      if (requests.length) throw new Error(`Deleting from ${table}: ${requests.length} items left unprocessed`);
    }
  }
}
