import WebSocket from 'ws';

/** An event (or an EventReference) as a stream client sees it, with its `seq`. */
export interface StreamMessage {
  kind: string;
  id: string;
  seq: number;
  [k: string]: any;
}

/** What the deployment answers a client's malformed message with (API Gateway cannot close with our code). */
export interface StreamNotice {
  error: { code: number; reason: string };
}

/**
 * A frame as it arrived: parsed when JSON, else its text (API Gateway's `@connections` posts any payload,
 * and the tier posts raw ones to check its frame limits).
 */
export type StreamFrame = StreamMessage | StreamNotice | string;

/** Whether a frame is an event or a reference: a JSON object with a numeric `seq`. */
const isMessage = (frame: StreamFrame): frame is StreamMessage =>
  typeof frame === 'object' && frame !== null && typeof (frame as StreamMessage).seq === 'number';

/** The handshake refused with an HTTP status (API Gateway answers `$connect`'s status; the local server its own). */
export class HandshakeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}`);
  }
}

export interface StreamOptions {
  headers?: Record<string, string>;
  /** Answer the server's pings (as browsers do); off to play a client that went silent. */
  autoPong?: boolean;
  /** The loopback address to connect from (any of 127.0.0.0/8): a client address of its own. */
  localAddress?: string;
}

export interface StreamClient {
  ws: WebSocket;
  /** Every frame received, in arrival order. */
  frames: StreamFrame[];
  /** The frames that carry a `seq` (events and references), in arrival order. */
  messages: StreamMessage[];
  /** When each of `messages` arrived (ms, performance.now()). */
  arrivals: number[];
  /** Resolves once open; rejects with HandshakeRefused (or the socket's error) if the handshake fails. */
  opened: Promise<void>;
  /** The refused handshake's status, once known (see connectStream); undefined while open or pending. */
  refused?: number;
  /** The refused handshake's body. */
  refusedBody?: string;
  /** How it closed (code, reason); a refused handshake closes with 1006. */
  closed: Promise<{ code: number; reason: string }>;
  /** Waits until a message with `seq` >= n arrived; fails at once if the socket closes first. */
  until(seq: number, timeoutMs?: number): Promise<void>;
  /** Waits until at least `n` frames arrived, and returns them. */
  untilFrames(n: number, timeoutMs?: number): Promise<StreamFrame[]>;
  /** The highest seq received (0 before any). */
  last(): number;
  close(): Promise<void>;
}

/** The URL of a conversation's event stream on `baseUrl` (http:// becomes ws://), with `query`. */
export function eventsUrl(baseUrl: string, conversationId: string, query: Record<string, string> = {}): string {
  const qs = new URLSearchParams(query).toString();
  return `${baseUrl.replace(/^http/, 'ws')}/sockets/events/${conversationId}${qs ? `?${qs}` : ''}`;
}

/** Opens `url` as a client would; nothing is assumed of the server beyond the protocol. */
export function openStream(url: string, options: StreamOptions = {}): StreamClient {
  const ws = new WebSocket(url, {
    headers: options.headers,
    autoPong: options.autoPong ?? true,
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
  });
  const frames: StreamFrame[] = [];
  const messages: StreamMessage[] = [];
  const arrivals: number[] = [];
  /** The highest seq received, kept as messages arrive (a wait checks it on every frame). */
  let highest = 0;
  let waiters: (() => boolean)[] = [];
  const notify = () => {
    waiters = waiters.filter((done) => !done());
  };
  /** Resolves once `ready()` holds, checked on every frame; fails on timeout or once closed without it. */
  const wait = <T>(ready: () => T | undefined, describe: () => string, timeoutMs: number) =>
    new Promise<T>((resolve, reject) => {
      let finished = false;
      const timer = setTimeout(() => settle(new Error(`Timed out after ${timeoutMs} ms: ${describe()}`)), timeoutMs);
      const settle = (error?: Error) => {
        const value = ready();
        if (value === undefined && !error) return false;
        if (!finished) {
          finished = true;
          clearTimeout(timer);
          if (value !== undefined) resolve(value);
          else reject(error);
        }
        return true;
      };
      if (settle()) return;
      waiters.push(() => settle());
      void closed.then(({ code, reason }) => settle(new Error(`Closed (${code} ${reason}): ${describe()}`)));
    });

  ws.on('message', (data) => {
    const text = String(data);
    let frame: StreamFrame;
    try {
      frame = JSON.parse(text);
    } catch {
      frame = text;
    }
    frames.push(frame);
    if (isMessage(frame)) {
      messages.push(frame);
      arrivals.push(performance.now());
      highest = Math.max(highest, frame.seq);
    }
    notify();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.on('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => {
        client.refused = res.statusCode;
        client.refusedBody = body;
        reject(new HandshakeRefused(res.statusCode ?? 0, body));
        // ws leaves the socket to the caller after an unexpected response: end it as a refused handshake ends.
        ws.terminate();
      });
    });
  });
  opened.catch(() => {});
  const last = () => highest;
  const seqsSeen = () => JSON.stringify(frames.map((f) => (isMessage(f) ? f.seq : f))).slice(0, 500);
  const client: StreamClient = {
    ws,
    frames,
    messages,
    arrivals,
    opened,
    closed,
    last,
    until: (seq, timeoutMs = 30_000) =>
      wait(
        () => (last() >= seq ? true : undefined),
        () => `waiting for seq ${seq}; last ${last()}, ${messages.length} messages`,
        timeoutMs,
      ).then(() => {}),
    untilFrames: (n, timeoutMs = 30_000) =>
      wait(
        () => (frames.length >= n ? frames : undefined),
        () => `waiting for ${n} frames, got ${frames.length}: ${seqsSeen()}`,
        timeoutMs,
      ),
    close: async () => {
      if (ws.readyState === WebSocket.CLOSED) return;
      if (ws.readyState === WebSocket.OPEN) ws.close(1000);
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      await closed;
    },
  };
  return client;
}

/**
 * Opens `url` and resolves once the handshake settled: open, or refused with `refused` set (a test of
 * who may connect reads the status). A socket error other than a refusal rejects.
 */
export async function connectStream(url: string, options: StreamOptions = {}): Promise<StreamClient> {
  const client = openStream(url, options);
  await client.opened.catch((err) => {
    if (!(err instanceof HandshakeRefused)) throw err;
  });
  return client;
}
