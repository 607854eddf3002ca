import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ReportedAggregate, StripeStore } from '#shared/billing/stripe.ts';
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

  async reported(orgId: string, fromHour: string, toHour: string): Promise<Map<string, ReportedAggregate>> {
    const items = await queryAll<{
      meter: string;
      hour: string;
      value: string;
      identifier: string;
      reportedBefore?: string;
      sent?: boolean;
      claimedAt?: string;
    }>({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      // sk `<hour>#<meter>` (and `<hour>#<meter>#+<before>` for corrections): an hour range is one key range.
      ExpressionAttributeValues: { ':pk': stripeKeys.marks(orgId), ':a': `${fromHour}#`, ':b': `${toHour}#~` },
      ConsistentRead: true,
    });
    const out = new Map<string, ReportedAggregate>();
    for (const i of items) {
      const key = `${i.meter}#${i.hour}`;
      const agg = out.get(key) ?? out.set(key, { micro: 0n, confirmed: 0n, pending: [] }).get(key)!;
      agg.micro += BigInt(i.value);
      if (i.reportedBefore !== undefined && !i.sent)
        agg.pending.push({
          identifier: i.identifier,
          value: i.value,
          reportedBefore: i.reportedBefore,
          claimedAt: i.claimedAt ?? '',
        });
      else agg.confirmed += BigInt(i.value);
    }
    return out;
  }

  claimCorrection(
    orgId: string,
    meter: string,
    hour: string,
    reportedBefore: string,
    identifier: string,
    value: string,
  ): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            pk: stripeKeys.marks(orgId),
            sk: `${hour}#${meter}#+${reportedBefore}`,
            meter,
            hour,
            identifier,
            value,
            reportedBefore,
            sent: false,
            claimedAt: new Date().toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async confirmCorrection(orgId: string, meter: string, hour: string, reportedBefore: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: stripeKeys.marks(orgId), sk: `${hour}#${meter}#+${reportedBefore}` },
        UpdateExpression: 'SET sent = :t, reportedAt = :now',
        ExpressionAttributeValues: { ':t': true, ':now': new Date().toISOString() },
      }),
    );
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
