import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SettingsPatch, SettingsPath, SettingsRecord, SettingsStore } from '#shared/settings/settings-store.ts';
import { conditionalReturn, conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';

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

  async update(userId: string, patch: SettingsPatch, updatedAt: string): Promise<SettingsRecord | undefined> {
    const e = new Expression();
    const sets = [`${e.name(['updatedAt'])} = ${e.value(updatedAt)}`];
    for (const { path, value, ifAbsent } of patch.set) {
      const p = e.name(path);
      sets.push(ifAbsent ? `${p} = if_not_exists(${p}, ${e.value(value)})` : `${p} = ${e.value(value)}`);
    }
    const removes = patch.remove.map((path) => e.name(path));
    // `secrets` exists only on a record of the per-field format: its nested places are there to write.
    const conditions = [`attribute_exists(${e.name(['secrets'])})`];
    for (const { exists, absent } of patch.assume) {
      const terms = [
        ...(exists ? [`attribute_exists(${e.name(exists)})`] : []),
        ...(absent ? [`attribute_not_exists(${e.name(absent)})`] : []),
      ];
      conditions.push(terms.length > 1 ? `(${terms.join(' OR ')})` : terms[0]!);
    }
    const update = `ADD ${e.name(['version'])} ${e.value(1)} SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`;
    const condition = conditions.join(' AND ');
    // DynamoDB takes expressions of at most 4 KB: a larger save is written whole by the caller instead.
    if (update.length > MAX_EXPRESSION || condition.length > MAX_EXPRESSION) return undefined;
    const item = await conditionalReturn(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { userId },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return item as SettingsRecord | undefined;
  }
}

const MAX_EXPRESSION = 4096;

/** Placeholders for an update: each distinct name once (`#n0`), each value once (`:v0`). */
class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly byName = new Map<string, string>();
  private valueCount = 0;

  name(path: SettingsPath): string {
    return path
      .map((segment) => {
        let placeholder = this.byName.get(segment);
        if (!placeholder) {
          placeholder = `#n${this.byName.size}`;
          this.byName.set(segment, placeholder);
          this.names[placeholder] = segment;
        }
        return placeholder;
      })
      .join('.');
  }

  value(v: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = v;
    return placeholder;
  }
}
