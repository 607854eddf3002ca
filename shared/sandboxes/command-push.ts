import type { SandboxCommand } from '#shared/protocol.ts';

/**
 * Pushes messages to the socket a sandbox program opened to the control plane (AWS: an API Gateway
 * WebSocket connection, `PostToConnection`). Adapter: `ApiGatewayCommandPush`
 * (apigateway-command-push.ts). Locally there is none: programs long-poll.
 */
export interface CommandPush {
  /** Sends one text message; false when the connection is gone (closed, expired, unknown). */
  send(connectionId: string, message: string): Promise<boolean>;
}

/** API Gateway's WebSocket frame size: a larger command is announced, and the program fetches it over HTTP. */
export const PUSH_MAX_BYTES = 32 * 1024;

/**
 * The pushed message: the long-poll's own body (`{"commands": [command]}`), so the program reads both
 * alike; a command over PUSH_MAX_BYTES becomes `{"commands": [], "fetch": true}` (fetch the queue now).
 */
export function pushMessage(command: SandboxCommand): string {
  const full = JSON.stringify({ commands: [command] });
  return Buffer.byteLength(full) <= PUSH_MAX_BYTES ? full : JSON.stringify({ commands: [], fetch: true });
}
