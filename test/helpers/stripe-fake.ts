import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import * as z from 'zod';

/*
 * A loopback Stripe for the billing adapter's tests: the v2 meter event session and stream, and the v1 meter
 * list and event summaries (Stripe's sum of a customer's events over a time range), each request
 * checked against the parameter types of the `stripe` npm package (the schemas below are written from
 * node_modules/stripe/cjs/resources/V2/Billing/MeterEventSession.d.ts and MeterEventStream.d.ts;
 * test/unit/stripe-fake.test.ts checks their keys and optionality against those files), its auth header
 * and version, and what Stripe itself enforces (35 days, the meter's payload keys, 100 events a request,
 * identifiers de-duplicated). What it accepted is in `events`; what it refused, with why, in `refusals`.
 */

/** `V2.Billing.MeterEventSessionCreateParams`: no members. */
export const meterEventSessionCreateParams = z.strictObject({});
/** `V2.Billing.MeterEventStreamCreateParams.Event`. */
export const meterEventStreamEvent = z.strictObject({
  event_name: z.string().min(1),
  identifier: z.string().min(1).max(100).optional(),
  payload: z.record(z.string(), z.string()),
  timestamp: z.string().optional(),
});
/** `V2.Billing.MeterEventStreamCreateParams`: "Supports up to 100 events per request". */
export const meterEventStreamCreateParams = z.strictObject({
  events: z.array(meterEventStreamEvent).min(1).max(100),
});

/** `Billing.MeterListParams` (and the `PaginationParams` it extends), as v1 query parameters. */
export const meterListParams = z.strictObject({
  ending_before: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  starting_after: z.string().optional(),
  expand: z.array(z.string()).optional(),
  status: z.enum(['active', 'inactive']).optional(),
});
/** `Billing.MeterListEventSummariesParams` (and `PaginationParams`): times in epoch seconds on minute boundaries. */
export const meterListEventSummariesParams = z.strictObject({
  ending_before: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  starting_after: z.string().optional(),
  customer: z.string().regex(/^cus_[A-Za-z0-9]+$/),
  end_time: z.coerce.number().int(),
  start_time: z.coerce.number().int(),
  expand: z.array(z.string()).optional(),
  value_grouping_window: z.enum(['day', 'hour']).optional(),
});

export type FakeEvent = z.infer<typeof meterEventStreamEvent> & { received: number };

export interface StripeFake {
  url: string;
  secretKey: string;
  /** Events taken, once per identifier (a repeat within Stripe's window is de-duplicated, not counted). */
  events: FakeEvent[];
  /** Repeats that were de-duplicated. */
  duplicates: FakeEvent[];
  refusals: string[];
  /** Every request: its path, its Authorization header, and (stream) how many events it carried. */
  requests: { path: string; auth: string; events?: number }[];
  /** The meters that exist (their `event_name`). */
  meters: Set<string>;
  /** Makes the next `n` stream requests fail with 500 (after taking nothing). */
  failNextStream(n: number): void;
  /** Makes the next `n` stream requests take their events and then answer 500 (an answer lost on the way). */
  loseNextStreamAnswer(n: number): void;
  /** Stripe's de-duplication window (about 24 hours) passes: identifiers seen so far are forgotten. */
  forgetIdentifiers(): void;
  /** The meters' ids (`mtr_...`) by event name, as `GET /v1/billing/meters` lists them. */
  meterIds: Map<string, string>;
  /** Ends every session now (the next stream request is 401, as an expired token is). */
  expireSessions(): void;
  close(): Promise<void>;
}

type Refuse = (status: number, why: string) => void;

const json = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

export async function startStripeFake(options: {
  meters: string[];
  apiVersion: string;
  /** The secret key it accepts (a planted one in the adversarial suite); default a new `sk_test_`. */
  secretKey?: string;
}): Promise<StripeFake> {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(12).toString('hex')}`;
  const sessions = new Map<string, number>();
  const seen = new Set<string>();
  let failStream = 0;
  let loseAnswer = 0;
  const fake: Omit<StripeFake, 'url' | 'close'> = {
    secretKey,
    events: [],
    duplicates: [],
    refusals: [],
    requests: [],
    meters: new Set(options.meters),
    meterIds: new Map(options.meters.map((m, i) => [m, `mtr_test${String(i).padStart(4, '0')}`])),
    failNextStream: (n) => (failStream = n),
    loseNextStreamAnswer: (n) => (loseAnswer = n),
    forgetIdentifiers: () => seen.clear(),
    expireSessions: () => sessions.clear(),
  };
  /** v1 GETs: the secret key, query parameters checked against the package's types. */
  const v1 = (req: IncomingMessage, send: (status: number, body: unknown) => void, refuse: Refuse) => {
    const url = new URL(req.url ?? '/', 'http://stripe.invalid');
    if (req.headers.authorization !== `Bearer ${secretKey}`) return refuse(401, 'v1 takes the secret key');
    const query: Record<string, string | string[]> = {};
    for (const [k, v] of url.searchParams) {
      if (!k.endsWith('[]')) query[k] = v;
      else query[k.slice(0, -2)] = [...((query[k.slice(0, -2)] as string[] | undefined) ?? []), v];
    }
    const list = (data: unknown[]) => send(200, { object: 'list', data, has_more: false, url: url.pathname });
    if (url.pathname === '/v1/billing/meters') {
      const parsed = meterListParams.safeParse(query);
      if (!parsed.success) return refuse(400, `meter list params: ${parsed.error.message}`);
      return list(
        [...fake.meterIds].map(([event_name, id]) => ({ id, object: 'billing.meter', event_name, status: 'active' })),
      );
    }
    const summaries = /^\/v1\/billing\/meters\/([^/]+)\/event_summaries$/.exec(url.pathname);
    if (summaries) {
      const meter = [...fake.meterIds].find(([, id]) => id === summaries[1])?.[0];
      if (!meter) return refuse(404, `no meter ${summaries[1]}`);
      const parsed = meterListEventSummariesParams.safeParse(query);
      if (!parsed.success) return refuse(400, `event summary params: ${parsed.error.message}`);
      const { customer, start_time, end_time } = parsed.data;
      if (start_time % 60 || end_time % 60 || end_time <= start_time)
        return refuse(400, 'start_time and end_time must be aligned with minute boundaries, start before end');
      const aggregated_value = fake.events
        .filter((e) => e.event_name === meter && e.payload.stripe_customer_id === customer)
        .filter((e) => {
          const at = Date.parse(e.timestamp ?? '') / 1000;
          return at >= start_time && at < end_time;
        })
        .reduce((t, e) => t + Number(e.payload.value), 0);
      return list([
        {
          id: `mtrs_${randomBytes(6).toString('hex')}`,
          object: 'billing.meter_event_summary',
          aggregated_value,
          start_time,
          end_time,
          livemode: false,
          meter: summaries[1],
        },
      ]);
    }
    return refuse(404, `no route ${url.pathname}`);
  };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const refuse: Refuse = (status, why) => {
      fake.refusals.push(why);
      send(status, { error: { type: 'invalid_request_error', message: why } });
    };
    const auth = String(req.headers.authorization ?? '');
    fake.requests.push({ path: req.url ?? '', auth });
    const text = await json(req);
    if (req.headers['stripe-version'] !== options.apiVersion)
      return refuse(400, `Stripe-Version ${String(req.headers['stripe-version'])}`);
    if (req.method === 'GET' && req.url?.startsWith('/v1/')) return v1(req, send, refuse);
    if (req.method !== 'POST') return refuse(405, `method ${req.method}`);
    if (!String(req.headers['content-type']).startsWith('application/json')) return refuse(400, 'v2 takes JSON');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return refuse(400, 'body is not JSON');
    }
    if (req.url === '/v2/billing/meter_event_session') {
      if (auth !== `Bearer ${secretKey}`) return refuse(401, 'bad secret key');
      const parsed = meterEventSessionCreateParams.safeParse(body);
      if (!parsed.success) return refuse(400, `session params: ${parsed.error.message}`);
      const token = `mes_${randomBytes(12).toString('hex')}`;
      const expires = Date.now() + 15 * 60_000;
      sessions.set(token, expires);
      return send(200, {
        id: `sess_${randomBytes(6).toString('hex')}`,
        object: 'v2.billing.meter_event_session',
        authentication_token: token,
        created: new Date().toISOString(),
        expires_at: new Date(expires).toISOString(),
        livemode: false,
      });
    }
    if (req.url === '/v2/billing/meter_event_stream') {
      const token = auth.replace(/^Bearer /, '');
      if (token === secretKey) return refuse(401, 'the stream takes a session token, not the secret key');
      if (!((sessions.get(token) ?? 0) > Date.now())) return refuse(401, 'expired or unknown session');
      const parsed = meterEventStreamCreateParams.safeParse(body);
      if (!parsed.success) return refuse(400, `stream params: ${parsed.error.message}`);
      fake.requests.at(-1)!.events = parsed.data.events.length;
      if (failStream > 0) {
        failStream--;
        return send(500, { error: { type: 'api_error', message: 'injected failure' } });
      }
      for (const e of parsed.data.events) {
        if (!fake.meters.has(e.event_name)) return refuse(400, `no meter ${e.event_name}`);
        if (!/^cus_[A-Za-z0-9]+$/.test(e.payload.stripe_customer_id ?? '')) return refuse(400, 'no stripe_customer_id');
        if (!/^\d+$/.test(e.payload.value ?? '')) return refuse(400, `value ${e.payload.value} is not an integer`);
        const at = Date.parse(e.timestamp ?? '');
        if (Number.isNaN(at) || at < Date.now() - 35 * 86_400_000 || at > Date.now() + 5 * 60_000)
          return refuse(400, `timestamp ${e.timestamp} outside 35 days ago .. 5 minutes ahead`);
      }
      for (const e of parsed.data.events) {
        const event = { ...e, received: Date.now() };
        if (e.identifier && seen.has(e.identifier)) fake.duplicates.push(event);
        else {
          if (e.identifier) seen.add(e.identifier);
          fake.events.push(event);
        }
      }
      if (loseAnswer > 0) {
        loseAnswer--;
        return send(500, { error: { type: 'api_error', message: 'injected failure after taking the events' } });
      }
      return send(200, {});
    }
    return refuse(404, `no route ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        // A browser or the server under test may hold keep-alive sockets open; close() alone waits for them.
        server.closeAllConnections();
      }),
  });
}
