import { ApiGatewayManagementApiClient, DeleteConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import { tableName } from '#shared/store/dynamo.ts';
import { queryAll } from '#shared/store/query.ts';
import type { StreamEviction } from '#shared/stream/eviction.ts';

/**
 * On AWS: a person's open stream connections from the `byUser` index of `streamConnections`, each
 * closed with DeleteConnection (its `$disconnect` then removes the item). A connection already gone
 * is fine.
 */
export class ApiGatewayStreamEviction implements StreamEviction {
  private readonly client: ApiGatewayManagementApiClient;

  constructor(callbackUrl: string) {
    this.client = new ApiGatewayManagementApiClient({ endpoint: callbackUrl });
  }

  async evict(userId: string): Promise<void> {
    const items = await queryAll<{ connectionId: string }>({
      TableName: tableName('streamConnections'),
      IndexName: 'byUser',
      KeyConditionExpression: 'userId = :u',
      ExpressionAttributeValues: { ':u': userId },
    });
    for (const { connectionId } of items) {
      try {
        await this.client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
      } catch (err) {
        if ((err as { name?: string }).name !== 'GoneException') throw err;
      }
    }
  }
}
