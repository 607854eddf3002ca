import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { StripeStore } from '#shared/billing/stripe.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';

/** Keys in table `usage` (docs/data-model.md, "usage"): neither carries `day`, so no index holds them. */
export const stripeKeys = {
  customer: (orgId: string) => `stripe#${orgId}`,
  marks: (orgId: string) => `stripemark#${orgId}`,
};

export class DynamoStripeStore implements StripeStore {
  private readonly db = documentClient();
  private readonly table = tableName('usage');

  async customer(orgId: string): Promise<string | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { pk: stripeKeys.customer(orgId), sk: 'customer' } }),
    );
    return out.Item?.customerId as string | undefined;
  }

  /** Sets the mapping; answers the previous customer id (for the audit entry). */
  async setCustomer(orgId: string, customerId: string): Promise<string | undefined> {
    const out = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: stripeKeys.customer(orgId), sk: 'customer' },
        UpdateExpression: 'SET customerId = :c, updatedAt = :t',
        ExpressionAttributeValues: { ':c': customerId, ':t': new Date().toISOString() },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return out.Attributes?.customerId as string | undefined;
  }

  async reported(orgId: string, fromHour: string, toHour: string): Promise<Set<string>> {
    const items = await queryAll<{ meter: string; hour: string }>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      // sk `<hour>#<meter>`: an hour range is one key range.
      ExpressionAttributeValues: { ':pk': stripeKeys.marks(orgId), ':a': `${fromHour}#`, ':b': `${toHour}#~` },
      ConsistentRead: true,
    });
    return new Set(items.map((i) => `${i.meter}#${i.hour}`));
  }

  markReported(orgId: string, meter: string, hour: string, identifier: string, value: string): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            pk: stripeKeys.marks(orgId),
            sk: `${hour}#${meter}`,
            meter,
            hour,
            identifier,
            value,
            reportedAt: new Date().toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }
}
