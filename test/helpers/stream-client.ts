import WebSocket from 'ws';

/** A message as a stream client sees it: an event (or an EventReference) with its `seq`. */
export interface StreamMessage {
  kind: string;
  id: string;
  seq: number;
  [k: string]: any;
}

export interface StreamClient {
  ws: WebSocket;
  /** Every message received, in arrival order, each with the time it arrived (ms, performance.now()). */
  messages: StreamMessage[];
  arrivals: number[];
  /** Resolves once open; rejects if the handshake fails. */
  opened: Promise<void>;
  /** How it closed (code, reason). */
  closed: Promise<{ code: number; reason: string }>;
  /** Waits until a message with `seq` >= n arrived. */
  until(seq: number, timeoutMs?: number): Promise<void>;
  /** The highest seq received (0 before any). */
  last(): number;
  close(): Promise<void>;
}

/**
 * Opens `/sockets/events/{conversationId}` on `baseUrl` (http:// becomes ws://) with the query and
 * headers given, as a client would; nothing is assumed of the server beyond the protocol.
 */
export function openStream(
  baseUrl: string,
  conversationId: string,
  query: Record<string, string> = {},
  /** `localAddress`: the loopback address to connect from (any of 127.0.0.0/8): a client address of its own. */
  options: { headers?: Record<string, string>; autoPong?: boolean; localAddress?: string } = {},
): StreamClient {
  const qs = new URLSearchParams(query).toString();
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/sockets/events/${conversationId}${qs ? `?${qs}` : ''}`, {
    headers: options.headers,
    autoPong: options.autoPong ?? true,
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
  });
  const messages: StreamMessage[] = [];
  const arrivals: number[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    arrivals.push(performance.now());
    messages.push(JSON.parse(String(data)) as StreamMessage);
    for (const w of waiters.splice(0)) w();
  });
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  opened.catch(() => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  const last = () => messages.reduce((m, x) => Math.max(m, x.seq), 0);
  const client: StreamClient = {
    ws,
    messages,
    arrivals,
    opened,
    closed,
    last,
    until: (seq, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`Timed out waiting for seq ${seq}; last ${last()}, ${messages.length} messages`)),
          timeoutMs,
        );
        const check = () => {
          if (last() >= seq) {
            clearTimeout(timer);
            resolve();
          } else waiters.push(check);
        };
        void closed.then(({ code, reason }) => {
          if (last() < seq) {
            clearTimeout(timer);
            reject(new Error(`Closed (${code} ${reason}) before seq ${seq}; last ${last()}`));
          }
        });
        check();
      }),
    close: async () => {
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close(1000);
      await closed;
    },
  };
  return client;
}
