import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

/**
 * The yardstick of the bundle benchmark: the least a DynamoDB-backed Lambda can be (a document
 * client and one GetItem), bundled with the same options as every entry (infra/bundle.ts).
 */
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export async function handler(event: { id: string }): Promise<unknown> {
  return (
    (await db.send(new GetCommand({ TableName: process.env.TABLE ?? 'minimal', Key: { id: event.id } }))).Item ?? null
  );
}
