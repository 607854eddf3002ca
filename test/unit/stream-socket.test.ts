import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SOCKET_PATH_FUNCTION } from '#infra/constructs/front.ts';
import type { Services } from '#shared/services.ts';
import { relayClientMessage } from '#shared/stream/client-messages.ts';
import { connectRequestOf, PING_ACTION } from '#shared/stream/socket-stream.ts';

/** The pieces of the AWS stream that need no AWS: CloudFront's path function, the $connect event's reading, the keep-alive. */
const handler = runInNewContext(`${SOCKET_PATH_FUNCTION}\n;handler`, {}) as (event: unknown) => any;
const viewer = (uri: string, querystring: Record<string, { value: string }> = {}) =>
  handler({
    version: '1.0',
    context: { eventType: 'viewer-request' },
    request: { method: 'GET', uri, querystring, headers: {}, cookies: {} },
  });

describe("CloudFront's /sockets/* function", () => {
  it("maps /sockets/<channel>/<id> onto the stage, keeping the client's query and overriding a forged channel", () => {
    const out = viewer('/sockets/events/0123456789abcdef0123456789abcdef', {
      resend_all: { value: 'true' },
      channel: { value: 'forged' },
    });
    expect(out.uri).toBe('/sockets');
    expect(out.querystring).toEqual({
      resend_all: { value: 'true' },
      channel: { value: 'events' },
      id: { value: '0123456789abcdef0123456789abcdef' },
    });
  });

  it('answers 404 for anything else under /sockets/', () => {
    for (const uri of [
      '/sockets',
      '/sockets/',
      '/sockets/events',
      '/sockets/events/a/b',
      '/sockets/events/a%2Fb',
      '/sockets/Events/abc',
      `/sockets/events/${'a'.repeat(129)}`,
    ]) {
      expect(viewer(uri), uri).toEqual({ statusCode: 404, statusDescription: 'Not Found' });
    }
  });
});

describe('the AWS stream', () => {
  it("reads $connect's headers in any case and its query as given", () => {
    const r = connectRequestOf({
      requestContext: { connectionId: 'c1=' },
      headers: { Cookie: 'a=b', Origin: 'https://x' },
      queryStringParameters: { channel: 'events', id: 'abc' },
    });
    expect(r).toEqual({
      connectionId: 'c1=',
      headers: { cookie: 'a=b', origin: 'https://x' },
      query: { channel: 'events', id: 'abc' },
    });
    expect(
      connectRequestOf({ requestContext: { connectionId: 'c2' }, headers: null, queryStringParameters: null }),
    ).toEqual({ connectionId: 'c2', headers: {}, query: {} });
  });

  it('a keep-alive is no message to relay (locally; on AWS the ping route takes it)', async () => {
    expect(
      await relayClientMessage(
        JSON.stringify({ action: PING_ACTION }),
        { userId: 'u', conversationId: 'c' },
        {} as Services,
      ),
    ).toBeNull();
    expect(
      await relayClientMessage(
        JSON.stringify({ action: 'other' }),
        { userId: 'u', conversationId: 'c' },
        {} as Services,
      ),
    ).toMatchObject({ code: 1007 });
  });
});
