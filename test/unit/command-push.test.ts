import {
  ApiGatewayManagementApiClient,
  ForbiddenException,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { ApiGatewayCommandPush } from '#shared/sandboxes/apigateway-command-push.ts';
import { PUSH_MAX_BYTES, pushMessage } from '#shared/sandboxes/command-push.ts';

const management = mockClient(ApiGatewayManagementApiClient);
const push = () =>
  new ApiGatewayCommandPush(
    'https://abc123.execute-api.eu-west-1.amazonaws.com/bridge',
    new ApiGatewayManagementApiClient({ region: 'eu-west-1' }),
  );

beforeEach(() => management.reset());

describe('ApiGatewayCommandPush (PostToConnection)', () => {
  it('posts the message as bytes to the connection', async () => {
    management.on(PostToConnectionCommand).resolves({});
    expect(await push().send('conn-1', '{"commands":[]}')).toBe(true);
    const [call] = management.commandCalls(PostToConnectionCommand);
    expect(call!.args[0].input.ConnectionId).toBe('conn-1');
    expect(Buffer.from(call!.args[0].input.Data as Uint8Array).toString('utf8')).toBe('{"commands":[]}');
  });

  it('answers false for a gone connection, and throws anything else (the caller logs it)', async () => {
    management
      .on(PostToConnectionCommand)
      .rejects(new GoneException({ message: 'gone', $metadata: { httpStatusCode: 410 } }));
    expect(await push().send('conn-1', 'x')).toBe(false);
    management
      .on(PostToConnectionCommand)
      .rejects(new ForbiddenException({ message: 'no', $metadata: { httpStatusCode: 403 } }));
    await expect(push().send('conn-1', 'x')).rejects.toThrow('no');
  });
});

describe('pushMessage', () => {
  const command = (payload: unknown) => ({
    seq: 7,
    type: 'send_message',
    payload,
    created_at: '2026-01-01T00:00:00.000Z',
  });

  it("is the long-poll's own body for a command that fits one frame", () => {
    expect(JSON.parse(pushMessage(command({ text: 'hi' })))).toEqual({ commands: [command({ text: 'hi' })] });
  });

  it('announces a command over the frame size instead of sending it', () => {
    const big = command({ text: 'x'.repeat(PUSH_MAX_BYTES) });
    expect(JSON.parse(pushMessage(big))).toEqual({ commands: [], fetch: true });
    // Bytes, not characters: multi-byte text counts at its encoded size.
    expect(JSON.parse(pushMessage(command({ text: 'é'.repeat(PUSH_MAX_BYTES / 2) })))).toEqual({
      commands: [],
      fetch: true,
    });
  });
});
