/** One HTTP client for the adversarial suite: keep-alive (Node's fetch pools connections), every answer recorded. */
export interface Answer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** The answer may rightly hold secrets (the start configuration a sandbox fetches): left out of the sweep. */
  holdsSecrets?: boolean;
}

export class Client {
  /** Every distinct response (status, headers, body) seen, for the secrets sweep. */
  readonly seen = new Set<string>();

  constructor(readonly baseUrl: string) {}

  async call(method: string, path: string, o: CallOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers['x-session-api-key'] = o.key;
    let body = o.rawBody;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    if (!o.holdsSecrets) this.seen.add(responseText(res, text));
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, text, body: parsed, headers: res.headers };
  }
}

/** A response as the sweep reads it: headers (without the per-request ones) and body. */
export function responseText(res: Response, body: string): string {
  const headers = [...res.headers].filter(([k]) => k !== 'x-request-id' && k !== 'date').map(([k, v]) => `${k}: ${v}`);
  return `${res.status}\n${headers.join('\n')}\n${body}`;
}
