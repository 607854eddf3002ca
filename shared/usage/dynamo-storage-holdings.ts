import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import type { StorageHolding } from '#shared/usage/usage-store.ts';

/**
 * Every sandbox's storage holding (table `usage`, pk `storheld`), a page at a time: the daily close's only
 * read, in a module of its own so no other bundle carries it.
 */
export async function* dynamoStorageHoldings(): AsyncGenerator<StorageHolding[]> {
  const pages = paginateQuery(
    { client: documentClient(), pageSize: 500 },
    {
      TableName: tableName('usage'),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': usageKeys.holdings },
      ConsistentRead: true,
    },
  );
  for await (const page of pages) yield (page.Items ?? []) as StorageHolding[];
}
