import { WebSocket } from 'ws';

/**
 * A WebSocket client for tier tests of a stream: it keeps every message (parsed when JSON) and the
 * close, or the status of a refused handshake. Reusable for any stream of the WebSocket API.
 */
export interface StreamClient {
  ws?: WebSocket;
  /** The handshake's refusal status (API Gateway answers `$connect`'s status), when refused. */
  refused?: number;
  refusedBody?: string;
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once at least `n` messages arrived (fails after `timeoutMs`, listing what came). */
  waitFor(n: number, timeoutMs?: number): Promise<any[]>;
  close(): Promise<void>;
}

/** `localAddress`: the loopback address to connect from (any of 127.0.0.0/8), a client address of its own. */
export function openStream(
  url: string,
  headers: Record<string, string> = {},
  options: { localAddress?: string } = {},
): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, ...(options.localAddress ? { localAddress: options.localAddress } : {}) });
    const messages: any[] = [];
    const waiters: (() => void)[] = [];
    let onClose!: (v: { code: number; reason: string }) => void;
    const closed = new Promise<{ code: number; reason: string }>((r) => (onClose = r));
    const client: StreamClient = {
      ws,
      messages,
      closed,
      waitFor: (n, timeoutMs = 30_000) =>
        new Promise((ok, fail) => {
          const check = () => {
            if (messages.length < n) return false;
            ok(messages);
            return true;
          };
          if (check()) return;
          const timer = setTimeout(
            () =>
              fail(
                new Error(
                  `Expected ${n} messages within ${timeoutMs} ms, got ${messages.length}: ${JSON.stringify(messages.map((m) => m?.seq ?? m)).slice(0, 500)}`,
                ),
              ),
            timeoutMs,
          );
          waiters.push(() => {
            if (check()) clearTimeout(timer);
          });
        }),
      close: async () => {
        if (ws.readyState === WebSocket.OPEN) ws.close(1000);
        await closed;
      },
    };
    ws.on('message', (data) => {
      const text = data.toString('utf8');
      try {
        messages.push(JSON.parse(text));
      } catch {
        messages.push(text);
      }
      for (const w of waiters) w();
    });
    ws.on('close', (code, reason) => onClose({ code, reason: reason.toString() }));
    ws.on('open', () => resolve(client));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => {
        onClose({ code: 1006, reason: '' });
        resolve({ ...client, ws: undefined, refused: res.statusCode, refusedBody: body });
      });
    });
    ws.on('error', (err) => {
      if (ws.readyState !== WebSocket.CLOSED) reject(err);
    });
  });
}
