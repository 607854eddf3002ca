import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { KeyStore } from '#shared/auth/key-store.ts';
import type { ApiKeyRecord } from '#shared/auth/model.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';

export class DynamoKeyStore implements KeyStore {
  private readonly db = documentClient();
  private readonly table = tableName('keys');

  async create(record: ApiKeyRecord): Promise<void> {
    await this.db.send(
      new PutCommand({ TableName: this.table, Item: record, ConditionExpression: 'attribute_not_exists(keyId)' }),
    );
  }

  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { keyId } }));
    return out.Item as ApiKeyRecord | undefined;
  }

  listByUser(userId: string): Promise<ApiKeyRecord[]> {
    return queryAll({
      TableName: this.table,
      IndexName: 'byUser',
      KeyConditionExpression: 'userId = :u',
      ExpressionAttributeValues: { ':u': userId },
    });
  }

  async revoke(keyId: string, at: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { keyId },
          UpdateExpression: 'SET revokedAt = :at',
          ConditionExpression:
            'attribute_exists(keyId) AND attribute_exists(userId) AND attribute_not_exists(revokedAt)',
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
  }

  async touch(keyId: string, at: string): Promise<void> {
    await conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { keyId },
          UpdateExpression: 'SET lastUsedAt = :at',
          ConditionExpression: 'attribute_exists(keyId)',
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
  }
}
