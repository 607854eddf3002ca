import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';

const gone = (err: unknown) =>
  (err as { name?: string; $metadata?: { httpStatusCode?: number } }).name === 'GoneException' ||
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 410;

/** PostToConnection / GetConnection on the stage's @connections endpoint (`STREAM_CALLBACK_URL`). */
export class ApiGatewayConnectionPush implements ConnectionPush {
  private readonly client: ApiGatewayManagementApiClient;

  constructor(callbackUrl: string) {
    this.client = new ApiGatewayManagementApiClient({ endpoint: callbackUrl });
  }

  async post(connectionId: string, data: string): Promise<'sent' | 'gone'> {
    try {
      await this.client.send(
        new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(data, 'utf8') }),
      );
      return 'sent';
    } catch (err) {
      if (gone(err)) return 'gone';
      throw err;
    }
  }

  async isOpen(connectionId: string): Promise<boolean> {
    try {
      await this.client.send(new GetConnectionCommand({ ConnectionId: connectionId }));
      return true;
    } catch (err) {
      if (gone(err)) return false;
      throw err;
    }
  }

  async drop(connectionId: string): Promise<void> {
    try {
      await this.client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
    } catch (err) {
      if (!gone(err)) throw err;
    }
  }
}
