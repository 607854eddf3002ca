import { request } from 'node:http';

export interface FromAnswer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * An HTTP request to `baseUrl` from `address` (any of 127.0.0.0/8): a client address of its own, as
 * the per-address limits count them (locally the connection's source; in the tier, through CloudFront,
 * its viewer address).
 */
export function requestFrom(
  baseUrl: string,
  address: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<FromAnswer> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method,
        localAddress: address,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode!, body: parsed, headers: res.headers, text });
        });
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
