import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalReturn, documentClient, tableName } from '#shared/store/dynamo.ts';
import type { StreamTicketRecord, StreamTicketStore } from '#shared/stream/ticket-store.ts';

/**
 * Tickets live in the keys table under `stream-ticket:<id>` (API key ids are hex, sessions are
 * `session:`), owner as `ticketUserId` so they stay out of the `byUser` index of API keys.
 * `expiresAtEpoch` is the table's TTL: DynamoDB removes unused tickets on its own.
 */
const itemKey = (ticketId: string) => `stream-ticket:${ticketId}`;

export class DynamoStreamTicketStore implements StreamTicketStore {
  private readonly db = documentClient();
  private readonly table = tableName('keys');

  async put(r: StreamTicketRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          keyId: itemKey(r.ticketId),
          ticketUserId: r.userId,
          conversationId: r.conversationId,
          hash: r.hash,
          expiresAt: r.expiresAt,
          expiresAtEpoch: Math.ceil(Date.parse(r.expiresAt) / 1000),
        },
        ConditionExpression: 'attribute_not_exists(keyId)',
      }),
    );
  }

  async take(ticketId: string, hash: string, now: Date): Promise<StreamTicketRecord | undefined> {
    const item = await conditionalReturn(() =>
      this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { keyId: itemKey(ticketId) },
          ConditionExpression: 'attribute_exists(ticketUserId) AND #hash = :hash AND expiresAt > :now',
          ExpressionAttributeNames: { '#hash': 'hash' },
          ExpressionAttributeValues: { ':hash': hash, ':now': now.toISOString() },
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    if (!item) return undefined;
    return {
      ticketId,
      userId: item.ticketUserId as string,
      conversationId: item.conversationId as string,
      hash: item.hash as string,
      expiresAt: item.expiresAt as string,
    };
  }
}
