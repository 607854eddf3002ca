import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { endpointConfig, tableName } from '#shared/store/dynamo.ts';

/**
 * Powertools' DynamoDB persistence on the idempotency table (shared/store/tables.ts), with the same
 * endpoint as every store: dynalite locally (`DYNAMODB_ENDPOINT`), the regional endpoint on AWS.
 */
export function dynamoIdempotencyStore(): DynamoDBPersistenceLayer {
  const endpoint = process.env.DYNAMODB_ENDPOINT;
  return new DynamoDBPersistenceLayer({
    tableName: tableName('idempotency'),
    ...(endpoint ? { clientConfig: endpointConfig(endpoint) } : {}),
  });
}
