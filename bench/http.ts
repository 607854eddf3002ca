import { Agent, request } from 'node:http';
import type { TestStack } from '#test/helpers/stack.ts';

/**
 * The JSON body of a request to the stack, or an error naming the request: a benchmark stops at the
 * first surprise instead of timing failures.
 */
export async function json(
  stack: TestStack,
  method: string,
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<any> {
  const res = await stack.call(method, path, options);
  if (res.status < 200 || res.status > 299)
    throw new Error(`${method} ${path}: HTTP ${res.status} ${res.text.slice(0, 500)}`);
  return res.body;
}

/**
 * A lean HTTP client on keep-alive connections (node:http, as the AWS SDK's own handler is), for
 * latency figures: fetch (undici) adds about 0.3 ms of its own per request on these machines,
 * which would be charged to the server. Resolves with the status once the body has been read.
 */
export function keepAliveClient(
  baseUrl: string,
  maxSockets = 1,
): {
  send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<number>;
  close(): void;
} {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const { hostname, port } = new URL(baseUrl);
  return {
    send: (method, path, headers, body) =>
      new Promise((resolve, reject) => {
        const req = request({ host: hostname, port, path, method, headers, agent }, (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
          res.once('error', reject);
        });
        req.once('error', reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}
