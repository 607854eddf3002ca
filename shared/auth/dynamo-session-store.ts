import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SessionRecord } from '#shared/auth/model.ts';
import type { SessionStore } from '#shared/auth/session-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';

/**
 * Sessions live in the keys table under `session:<id>` (API key ids are hex, so they cannot
 * collide). The owner is kept as `sessionUserId`, not `userId`, so sessions stay out of the
 * `byUser` index that lists a user's API keys. `expiresAtEpoch` is the table's TTL attribute:
 * DynamoDB removes expired sessions on its own (the code checks `expiresAt` regardless).
 */
const itemKey = (sessionId: string) => `session:${sessionId}`;

export class DynamoSessionStore implements SessionStore {
  private readonly db = documentClient();
  private readonly table = tableName('keys');

  async create(r: SessionRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          keyId: itemKey(r.sessionId),
          sessionUserId: r.userId,
          apiKeyId: r.keyId,
          hash: r.hash,
          createdAt: r.createdAt,
          expiresAt: r.expiresAt,
          expiresAtEpoch: Math.ceil(Date.parse(r.expiresAt) / 1000),
        },
        ConditionExpression: 'attribute_not_exists(keyId)',
      }),
    );
  }

  async get(sessionId: string): Promise<SessionRecord | undefined> {
    const item = (
      await this.db.send(
        new GetCommand({ TableName: this.table, Key: { keyId: itemKey(sessionId) }, ConsistentRead: true }),
      )
    ).Item;
    if (!item || typeof item.sessionUserId !== 'string') return undefined;
    return {
      sessionId,
      userId: item.sessionUserId,
      keyId: item.apiKeyId as string,
      hash: item.hash as string,
      createdAt: item.createdAt as string,
      expiresAt: item.expiresAt as string,
    };
  }

  async delete(sessionId: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { keyId: itemKey(sessionId) } }));
  }
}
