import {
  ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';

/** CommandPush over the bridge socket API's management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`). */
export class ApiGatewayCommandPush implements CommandPush {
  private readonly client: ApiGatewayManagementApiClient;

  constructor(endpoint: string, client?: ApiGatewayManagementApiClient) {
    this.client = client ?? new ApiGatewayManagementApiClient({ endpoint });
  }

  async send(connectionId: string, message: string): Promise<boolean> {
    try {
      await this.client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(message) }));
      return true;
    } catch (err) {
      if (
        err instanceof GoneException ||
        (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 410
      )
        return false;
      throw err;
    }
  }
}
