/**
 * Sending to one WebSocket connection by id, from any function (API Gateway's @connections API on
 * AWS). Adapters: `ApiGatewayConnectionPush`.
 */
export interface ConnectionPush {
  /** Sends one message; `gone` when the connection no longer exists (API Gateway's 410). */
  post(connectionId: string, data: string): Promise<'sent' | 'gone'>;
  /** Whether API Gateway knows the connection as established (not before its `$connect` returned). */
  isOpen(connectionId: string): Promise<boolean>;
  /** Closes the connection from the server's side (DeleteConnection); nothing when it is gone already. */
  drop(connectionId: string): Promise<void>;
}
