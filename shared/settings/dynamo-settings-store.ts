import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SettingsRecord, SettingsStore } from '#shared/settings/settings-store.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';

export class DynamoSettingsStore implements SettingsStore {
  private readonly db = documentClient();
  private readonly table = tableName('settings');

  async get(userId: string): Promise<SettingsRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { userId }, ConsistentRead: true }));
    return out.Item as SettingsRecord | undefined;
  }

  async put(record: SettingsRecord, expectedVersion: number): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: record,
          ConditionExpression: expectedVersion === 0 ? 'attribute_not_exists(userId)' : 'version = :v',
          ExpressionAttributeValues: expectedVersion === 0 ? undefined : { ':v': expectedVersion },
        }),
      ),
    );
  }
}
