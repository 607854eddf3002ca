import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { DynamoAgentReports } from '#shared/usage/dynamo-agent-reports.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { json } from './http.ts';
import { benchEvents, postBatches, postBatchesFromChild, WARMUP_BATCHES, type IngestRun } from './ingest-client.ts';
import { count, interleaved, ms, p50p99, percentile, time } from './stats.ts';

const ratio = (a: number[], b: number[]) => `${(percentile(a, 50) / percentile(b, 50)).toFixed(2)}×`;

const CONVERSATIONS = 20;
/** Poll period while timing a start: the resolution of those figures. */
const POLL_MS = 10;
const SEARCHES = 200;
/** `BENCH_DEEP_EVENTS` makes a quick run smaller; the recorded run uses 100,000. */
const DEEP_EVENTS = Number(process.env.BENCH_DEEP_EVENTS ?? 100_000);
const SMALL_EVENTS = 10;
const HUNDRED_EVENTS = 100;
/** In the deep conversation, one event in this many is a MessageEvent: the rare kind of the kind-filter figures. */
const RARE_EVERY = 1000;
/** The LLM's script for every timed conversation: one tool call (finish), so the agent's first event is an ActionEvent. */
const SCRIPT = () => reply.finish('Done.');

interface Ctx {
  stack: TestStack;
  llm: ScriptedLlm;
}

/** What a client sees of a start: ms from the POST to the start task's READY, and to the agent's first reply in events/search. */
interface StartTiming {
  ready: number;
  firstAgentEvent: number;
  sandboxId: string;
}

const step = (what: string) => process.stderr.write(`bench: conversations: ${what}\n`);

const isAgentReply = (e: { source?: string; kind?: string }) => e.source === 'agent' && e.kind !== 'SystemPromptEvent';

async function timedStart({ stack, llm }: Ctx, sandboxId?: string): Promise<StartTiming> {
  llm.enqueue(SCRIPT());
  const t = performance.now();
  const task = await json(stack, 'POST', '/api/v1/app-conversations', {
    body: {
      initial_message: { role: 'user', content: [{ type: 'text', text: 'Finish at once.' }], run: true },
      ...(sandboxId ? { sandbox_id: sandboxId } : {}),
    },
  });
  const ready = await untilReady(stack, task.id);
  const readyMs = performance.now() - t;
  const cid = ready.app_conversation_id as string;
  await waitFor(
    `the agent's first event in ${cid}`,
    async () => (await json(stack, 'GET', `/api/v1/events/search?conversation_id__eq=${cid}`)).items.find(isAgentReply),
    { timeoutMs: 60_000, intervalMs: POLL_MS },
  );
  const firstMs = performance.now() - t;
  // Unmeasured: the agent finishes, so the next start meets a quiet sandbox and the script is used up.
  await waitFor(
    `${cid} to finish`,
    async () => {
      const [c] = await json(stack, 'GET', `/api/v1/app-conversations?ids=${cid}`);
      if (c.execution_status === 'error') throw new Error(`conversation ${cid} ended in error`);
      return c.execution_status === 'finished' ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
  return { ready: readyMs, firstAgentEvent: firstMs, sandboxId: ready.sandbox_id };
}

export async function untilReady(stack: TestStack, taskId: string): Promise<any> {
  return waitFor(
    `start task ${taskId} to be READY`,
    async () => {
      const [task] = await json(stack, 'GET', `/api/v1/app-conversations/start-tasks?ids=${taskId}`);
      if (task.status === 'ERROR') throw new Error(`start task ${taskId} failed: ${task.detail}`);
      return task.status === 'READY' ? task : undefined;
    },
    { timeoutMs: 90_000, intervalMs: POLL_MS },
  );
}

/** A conversation on the sandbox with no message: the agent starts and waits, so only our events arrive after it. */
async function idleConversation(stack: TestStack, sandboxId: string): Promise<string> {
  const task = await json(stack, 'POST', '/api/v1/app-conversations', { body: { sandbox_id: sandboxId } });
  return (await untilReady(stack, task.id)).app_conversation_id;
}

const eventCount = async (stack: TestStack, cid: string): Promise<number> =>
  json(stack, 'GET', `/api/v1/events/count?conversation_id__eq=${cid}`);

const EVENT_BYTES = Buffer.byteLength(JSON.stringify(benchEvents('x', 0, 1)[0]));
/** `BENCH_INGEST_BATCHES` (batches per client) makes a quick run smaller; the recorded run uses the table's. */
const INGEST_BATCHES = process.env.BENCH_INGEST_BATCHES ? Number(process.env.BENCH_INGEST_BATCHES) : undefined;
/** Ingest runs: [batch size, batches per client, clients]. */
const INGEST_RUNS = (
  [
    [10, 200, 1],
    [100, 30, 1],
    [100, 10, 4],
  ] as const
).map(([size, batches, clients]) => [size, INGEST_BATCHES ?? batches, clients] as const);

/**
 * Metering off, for the ingest comparison: no deployment setting turns metering off (it is always on), so the
 * bench swaps, in the server's process (this one), the ledger's two writers that ingest and heartbeats reach
 * for what a duplicate does (nothing written): the agent's LLM report and a heartbeat's compute record. What
 * is left of metering is the batch's scan for a report. Returns the restore.
 */
function meteringOff(): () => void {
  const report = DynamoAgentReports.prototype.recordAgentReport;
  const compute = DynamoUsageStore.prototype.recordCompute;
  DynamoAgentReports.prototype.recordAgentReport = async () => false;
  DynamoUsageStore.prototype.recordCompute = async () => undefined;
  return () => {
    DynamoAgentReports.prototype.recordAgentReport = report;
    DynamoUsageStore.prototype.recordCompute = compute;
  };
}

interface Ingest {
  batchSize: number;
  clients: number;
  /** Whether the posting client ran in this process (beside the server) or in a child process of its own. */
  client: 'same process' | 'child process';
  events: number;
  perSecond: number;
  /** Events per second of this process's CPU time (gateway, handlers and dynalite; and the client when it runs here). */
  perServerCpuSecond: number;
  /** Events per second of the CPU time of server and client together. */
  perCpuSecond: number;
  batchMs: number[];
}

/** Two runs of one configuration as one: their rates averaged, their batch times together. */
function meanOf(a: Ingest, b: Ingest): Ingest {
  const mean = (k: 'perSecond' | 'perServerCpuSecond' | 'perCpuSecond') => (a[k] + b[k]) / 2;
  return {
    ...a,
    events: a.events + b.events,
    perSecond: mean('perSecond'),
    perServerCpuSecond: mean('perServerCpuSecond'),
    perCpuSecond: mean('perCpuSecond'),
    batchMs: [...a.batchMs, ...b.batchMs],
  };
}

/** Posts events numbered after what the conversation holds (its agent may have posted a few). */
async function postNumbered(
  stack: TestStack,
  sandboxId: string,
  key: string,
  cid: string,
  events: AgentEventEnvelope[],
  offset: number,
): Promise<void> {
  const path = `/api/v1/webhooks/${sandboxId}/events/${cid}?first_seq=${offset + 1}`;
  const res = await json(stack, 'POST', path, { key, body: events });
  if (res.added !== events.length) throw new Error(`${path}: added ${res.added} of ${events.length}`);
}

/**
 * `clients` loops posting `batches` batches each through the events bridge route, as sandboxes do (see
 * `postBatches`), from this process or from a child process; this process's CPU time is taken from
 * the end of the warm-up batches to the last answer.
 */
async function ingest(
  stack: TestStack,
  sandboxId: string,
  key: string,
  cid: string,
  batchSize: number,
  batches: number,
  clients: number,
  client: Ingest['client'],
  reports = false,
): Promise<Ingest> {
  const plan = {
    url: stack.url,
    sandboxId,
    key,
    cid,
    batchSize,
    batches,
    clients,
    base: await eventCount(stack, cid),
    reports,
  };
  let cpu = process.cpuUsage();
  const started = () => (cpu = process.cpuUsage());
  const run: IngestRun =
    client === 'same process' ? await postBatches(plan, started) : await postBatchesFromChild(plan, started);
  const used = process.cpuUsage(cpu);
  if ((await eventCount(stack, cid)) !== plan.base + (WARMUP_BATCHES + batches * clients) * batchSize)
    throw new Error(`${cid}: the count does not cover every batch posted`);
  const events = clients * batches * batchSize;
  const serverCpu = (used.user + used.system) / 1e6;
  return {
    batchSize,
    clients,
    client,
    events,
    perSecond: events / (run.wallMs / 1000),
    perServerCpuSecond: events / serverCpu,
    perCpuSecond: events / (serverCpu + (run.clientCpuMs ?? 0) / 1000),
    batchMs: run.batchMs,
  };
}

/** Fills a conversation up to `total` through the store itself (no HTTP): 100 events per append, 4 appends in flight. */
async function fill(userId: string, cid: string, have: number, total: number, rareEvery: number): Promise<number> {
  const store = new DynamoEventStore();
  let next = have;
  return time(() =>
    Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < total) {
          const from = next;
          next = Math.min(total, next + 100);
          await store.append(
            { userId, conversationId: cid },
            from + 1,
            benchEvents('fill', from, next - from, rareEvery),
          );
        }
      }),
    ),
  );
}

/** One GET of an events/search (or count) URL, to the last byte of the body. */
function searchRequest(stack: TestStack, query: string, route: 'search' | 'count' = 'search'): () => Promise<void> {
  return async () => {
    const res = await fetch(`${stack.url}/api/v1/events/${route}?${query}`, {
      headers: { 'x-session-api-key': stack.devKey },
    });
    if (res.status !== 200) throw new Error(`events/${route}?${query}: HTTP ${res.status}`);
    await res.arrayBuffer();
  };
}

/** Every page of a conversation's events, in order; returns the cursor of the last non-empty page. */
async function walk(stack: TestStack, cid: string): Promise<{ lastPageCursor: string; pages: number; events: number }> {
  let cursor: string | null = null;
  let lastPageCursor = '';
  let pages = 0;
  let events = 0;
  for (let guard = 0; guard < DEEP_EVENTS; guard++) {
    const page: { items: unknown[]; next_page_id: string | null } = await json(
      stack,
      'GET',
      `/api/v1/events/search?conversation_id__eq=${cid}&limit=100${cursor ? `&page_id=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (page.items.length) {
      pages++;
      events += page.items.length;
      if (cursor) lastPageCursor = cursor;
    }
    if (!page.next_page_id || !page.items.length) break;
    cursor = page.next_page_id;
  }
  return { lastPageCursor, pages, events };
}

/**
 * Events on the local stack: ingest through the events bridge route with a running sandbox's key, then
 * count and search (unfiltered and by a rare kind) on conversations of 10, 100 and 100,000 events.
 */
export async function benchEventRoutes(): Promise<string> {
  const { stack, llm, stop } = await startAgentStack({ stack: { sweepIntervalMs: 3_600_000 } });
  try {
    const sandboxId = (await timedStart({ stack, llm })).sandboxId;
    // Ingest: the sandbox's own session key (no response shows it; read from its sealed record).
    const key = await stack.sandboxKey(sandboxId);
    if (!key) throw new Error(`sandbox ${sandboxId} has no session key`);
    const [sandbox] = await json(stack, 'GET', `/api/v1/sandboxes?id=${sandboxId}`);
    step('event ingest');
    const ingestRuns: Ingest[] = [];
    // Each configuration from both places in turn, so a change in the machine's load touches both alike.
    for (const [batchSize, batches, clients] of INGEST_RUNS) {
      for (const client of ['same process', 'child process'] as const) {
        ingestRuns.push(
          await ingest(
            stack,
            sandboxId,
            key,
            await idleConversation(stack, sandboxId),
            batchSize,
            batches,
            clients,
            client,
          ),
        );
      }
    }

    // The same runs with metering off beside metered ones (the client in a child process), batches without and
    // with the agent's LLM report; metered, off, off, metered, back to back, each side the mean of its two runs, so
    // neither side always runs second (warmer) and a steady change in the machine's load touches both alike.
    step('event ingest, metered and with metering off');
    const metering: { reports: boolean; on: Ingest; off: Ingest }[] = [];
    for (const [batchSize, batches, clients] of INGEST_RUNS)
      for (const reports of [false, true]) {
        const run = async () =>
          ingest(
            stack,
            sandboxId,
            key,
            await idleConversation(stack, sandboxId),
            batchSize,
            batches,
            clients,
            'child process',
            reports,
          );
        const first = await run();
        const restore = meteringOff();
        let off: Ingest;
        try {
          off = meanOf(await run(), await run());
        } finally {
          restore();
        }
        metering.push({ reports, on: meanOf(first, await run()), off });
      }

    // Search: conversations topped up to exactly 10 and 100 events, and one filled to 100,000.
    const topUp = async (n: number, rareEvery: number) => {
      const cid = await idleConversation(stack, sandboxId);
      const have = await eventCount(stack, cid);
      if (have > n) throw new Error(`the idle conversation already has ${have} events`);
      await postNumbered(stack, sandboxId, key, cid, benchEvents('top', have, n - have, rareEvery), have);
      return cid;
    };
    const small = await topUp(SMALL_EVENTS, 0);
    const hundred = await topUp(HUNDRED_EVENTS, 10);
    step(`writing ${count(DEEP_EVENTS)} events through DynamoEventStore.append`);
    const deep = await idleConversation(stack, sandboxId);
    const fillMs = await fill(sandbox.created_by_user_id, deep, await eventCount(stack, deep), DEEP_EVENTS, RARE_EVERY);
    let total = 0;
    const countMs = await time(async () => (total = await eventCount(stack, deep)));
    const smallTotal = await eventCount(stack, small);
    if (total !== DEEP_EVENTS || smallTotal !== SMALL_EVENTS)
      throw new Error(`expected ${SMALL_EVENTS} and ${DEEP_EVENTS} events, found ${smallTotal} and ${total}`);

    step('event search');
    let walked = { lastPageCursor: '', pages: 0, events: 0 };
    const walkMs = await time(async () => (walked = await walk(stack, deep)));
    if (walked.events !== DEEP_EVENTS) throw new Error(`walking the pages found ${walked.events} events`);
    const rare = await json(
      stack,
      'GET',
      `/api/v1/events/search?conversation_id__eq=${deep}&kind__eq=MessageEvent&limit=100`,
    );
    if (rare.items.length !== DEEP_EVENTS / RARE_EVERY)
      throw new Error(`the kind filter found ${rare.items.length} of ${DEEP_EVENTS / RARE_EVERY} messages`);

    // Every search and count once a round, round after round (see `interleaved`): the ratios are taken side by side.
    const q = (query: string, route: 'search' | 'count' = 'search') => searchRequest(stack, query, route);
    const m = await interleaved(SEARCHES, {
      small: q(`conversation_id__eq=${small}`),
      smallDesc: q(`conversation_id__eq=${small}&sort_order=TIMESTAMP_DESC`),
      hundred: q(`conversation_id__eq=${hundred}`),
      hundredKind: q(`conversation_id__eq=${hundred}&kind__eq=MessageEvent`),
      deep: q(`conversation_id__eq=${deep}`),
      deepLast: q(`conversation_id__eq=${deep}&page_id=${encodeURIComponent(walked.lastPageCursor)}`),
      deepDesc: q(`conversation_id__eq=${deep}&sort_order=TIMESTAMP_DESC`),
      deepKind: q(`conversation_id__eq=${deep}&kind__eq=MessageEvent`),
      deepKind10: q(`conversation_id__eq=${deep}&kind__eq=MessageEvent&limit=10`),
      counts: q(`conversation_id__eq=${small}`, 'count'),
      deepCounts: q(`conversation_id__eq=${deep}`, 'count'),
    });
    const { counts, deepCounts } = m;
    const searches: [string, string, number[]][] = [
      [`${SMALL_EVENTS} events`, `first page (all ${SMALL_EVENTS})`, m.small],
      [`${SMALL_EVENTS} events`, 'newest first (`TIMESTAMP_DESC`)', m.smallDesc],
      [`${HUNDRED_EVENTS} events`, `first page (all ${HUNDRED_EVENTS})`, m.hundred],
      [`${HUNDRED_EVENTS} events`, '`kind__eq=MessageEvent` (10 of them)', m.hundredKind],
      [`${count(DEEP_EVENTS)} events`, 'first page (100)', m.deep],
      [
        `${count(DEEP_EVENTS)} events`,
        `page ${count(walked.pages)} of ${count(walked.pages)} (by its \`page_id\`)`,
        m.deepLast,
      ],
      [`${count(DEEP_EVENTS)} events`, 'newest first (`TIMESTAMP_DESC`, 100)', m.deepDesc],
      [
        `${count(DEEP_EVENTS)} events`,
        `\`kind__eq=MessageEvent\` (all ${count(DEEP_EVENTS / RARE_EVERY)}, one in ${count(RARE_EVERY)})`,
        m.deepKind,
      ],
      [`${count(DEEP_EVENTS)} events`, '`kind__eq=MessageEvent&limit=10` (as many as on 100 events)', m.deepKind10],
    ];
    return [
      '## Event ingest',
      '',
      `Events posted through the events bridge route (\`POST /api/v1/webhooks/{sandbox_id}/events/{conversation_id}\`) over HTTP to the local gateway with the sandbox's session key, as a sandbox does; each event about ${EVENT_BYTES} bytes of JSON, numbered after what the conversation holds (nothing repeated). ${WARMUP_BATCHES} unmeasured batches go first; then each client posts its next batch when the previous one is answered (one keep-alive connection each, node:http); 4 clients post in rounds of 4 batches at once (as a sandbox never does: it has one post in flight), taking turns in the numbering, so batches land ahead of a gap and the counter catches up. Each configuration runs twice: with the client in the server's process (as before), and as a load test over loopback from a child process, so the server's process (the gateway, the handlers and dynalite, as \`npm start\` runs them) has a core and the client the other; the rate "here" is that second figure. The conversation's sandbox program runs meanwhile (its heartbeats and command polls are part of the server's CPU).`,
      '',
      '| client | batch size | clients | events | events/s | events per server CPU-second | per CPU-second, client included | batch p50 / p99 |',
      '|---|---|---|---|---|---|---|---|',
      ...ingestRuns.map(
        (r) =>
          `| ${r.client} | ${r.batchSize} | ${r.clients} | ${count(r.events)} | ${count(r.perSecond)} | ${count(r.perServerCpuSecond)} | ${count(r.perCpuSecond)} | ${p50p99(r.batchMs, 1)} |`,
      ),
      '',
      `*events/s* is wall time, which other work on a shared machine stretches (the load average at the top of this page). *Events per server CPU-second* divides by the CPU time the server's process spent (with the client in it on the *same process* rows): what the server reaches with a core to itself. Most of that CPU is dynalite and the AWS SDK's request to it (serialising, HTTP over a unix socket; locally unsigned, as dynalite checks no signature: \`shared/store/dynamo.ts\`); the handler's own work (body parse, validation, the log line) is about a tenth. A batch is authenticated (the sandbox's record, read once by the wrapper's key check and handed to the operation), placed (the conversation, read together with the counter), appended (BatchWriteItem requests of 25 in flight together, each built in a turn of the event loop of its own, one conditional update of the counter that returns the committed end for the stream) and recorded as activity at most every 30 s: on AWS a 100-event batch is 8 DynamoDB requests in 4 round trips (test/integration/ingest-requests.test.ts counts them). A batch that lands beyond a gap flags the counter and reads one key (is the gap still open?); the batch that fills the gap carries the counter over it (one keys-only Query of the numbers stored past the counter). With 4 clients those catch-ups meet each other and the flags of newer batches, and retry their conditional write: that is what the 4-client rows pay per event.`,
      '',
      '### Ingest with metering off',
      '',
      `Each configuration above, the client in a child process, metered, with metering off twice, then metered again, back to back (each side the mean of its two runs, so neither always runs second). Metering is always on in a deployment; for the *off* runs the bench swaps the ledger's two writers that ingest and heartbeats reach (\`DynamoAgentReports.recordAgentReport\`, the agent's LLM report of a user's own key; \`DynamoUsageStore.recordCompute\`, a heartbeat's compute record) for no-ops in the server's process, which leaves the batch's scan for a report. *Without a report*: the batches above, for which ingest writes nothing for metering (test/integration/ingest-requests.test.ts counts 0 writes). *With a report*: each batch ends with the agent's cumulative LLM usage report (a \`metrics\` state update), when metered kept on the conversation's counter in the write that charges its rate bucket (no request of its own) and recorded in the ledger (one conditional write and two \`ADD\`s to the day totals) once the sandbox's activity is due, every 30 s, as in a deployment; a run's status changes, which also record it, are not in these batches. The issue's bound: each metered row within 10% of its run with metering off (the *server CPU per event* column; wall-time rates move with the machine's load).`,
      '',
      '| batches | batch size | clients | events/s metered / off | events per server CPU-second metered / off | server CPU per event, metered / off | batch p50 / p99 metered | off |',
      '|---|---|---|---|---|---|---|---|',
      ...metering.map(
        ({ reports, on, off }) =>
          `| ${reports ? 'with a report' : 'without a report'} | ${on.batchSize} | ${on.clients} | ${count(on.perSecond)} / ${count(off.perSecond)} | ${count(on.perServerCpuSecond)} / ${count(off.perServerCpuSecond)} | ${(off.perServerCpuSecond / on.perServerCpuSecond).toFixed(2)}× | ${p50p99(on.batchMs, 1)} | ${p50p99(off.batchMs, 1)} |`,
      ),
      '',
      '## Event search',
      '',
      `\`GET /api/v1/events/search\` (default limit 100) on conversations with ${SMALL_EVENTS}, ${HUNDRED_EVENTS} and ${count(DEEP_EVENTS)} events, ${SEARCHES} rounds after 20 warm-up ones, each round every search and count below once, in an order shuffled each round, timed to the last byte of the body. An unfiltered page is one Query on the conversation's partition from the sequence number in \`page_id\`; a kind filter is one Query on the \`byKind\` index (conversation, kind, sequence; keys and timestamp only) up to the committed end and one BatchGetItem of the page's events, so a rare kind costs its page, not the partition. On DynamoDB a page's cost depends on the items it reads, not on how deep it starts. The ${count(DEEP_EVENTS)} events were written straight through \`DynamoEventStore.append\` (100 per call, 4 calls in flight, no HTTP) to save time: ${(fillMs / 1000).toFixed(0)} s, ${count(DEEP_EVENTS / (fillMs / 1000))} events/s.`,
      '',
      '| conversation | page | p50 / p99 |',
      '|---|---|---|',
      ...searches.map(([conv, page, s]) => `| ${conv} | ${page} | ${p50p99(s, 1)} |`),
      '',
      `Ratios (p50, same run): first page at ${count(DEEP_EVENTS)} vs ${HUNDRED_EVENTS} events ${ratio(searches[4]![2], searches[2]![2])}; a kind page of 10 at ${count(DEEP_EVENTS)} vs ${HUNDRED_EVENTS} events ${ratio(searches[8]![2], searches[3]![2])}; the count at ${count(DEEP_EVENTS)} vs ${SMALL_EVENTS} events ${ratio(deepCounts, counts)}.`,
      '',
      `\`GET /api/v1/events/count\` (unfiltered: one read of the counter item) p50 / p99 (${SEARCHES} requests): ${p50p99(counts, 1)} on ${SMALL_EVENTS} events, ${p50p99(deepCounts, 1)} on ${count(DEEP_EVENTS)}. Once each on the ${count(DEEP_EVENTS)}-event conversation: the first count took ${ms(countMs, 0)}; reading every page in order (${count(walked.pages)} requests of 100) took ${(walkMs / 1000).toFixed(1)} s.`,
      '',
    ].join('\n');
  } finally {
    await stop();
  }
}

/**
 * Conversations on the local stack: an agent in a sandbox process, driven by a scripted
 * OpenAI-compatible LLM on loopback: start latency on fresh and on reused sandboxes (the event
 * through the events bridge route, and events/search on a small and a 100,000-event conversation.
 */
export async function benchConversations(): Promise<string> {
  const { stack, llm, stop } = await startAgentStack({ stack: { sweepIntervalMs: 3_600_000 } });
  const ctx = { stack, llm };
  try {
    // One unmeasured conversation warms tsx's cache, the handlers and the agent's modules.
    const warm = await timedStart(ctx);
    await json(stack, 'DELETE', `/api/v1/sandboxes/${warm.sandboxId}`);

    step(`${CONVERSATIONS} starts on fresh sandboxes`);
    const fresh: StartTiming[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) {
      const s = await timedStart(ctx);
      fresh.push(s);
      await json(stack, 'DELETE', `/api/v1/sandboxes/${s.sandboxId}`);
    }

    step(`${CONVERSATIONS} starts on one reused sandbox`);
    // The reused sandbox: started by an unmeasured conversation, then every conversation passes its id.
    const sandboxId = (await timedStart(ctx)).sandboxId;
    const reused: StartTiming[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) reused.push(await timedStart(ctx, sandboxId));

    const startRow = (name: string, pick: (s: StartTiming) => number) =>
      `| ${name} | ${p50p99(fresh.map(pick), 0)} | ${p50p99(reused.map(pick), 0)} |`;
    return [
      '## Conversations (local: the agent in a sandbox process, a scripted LLM)',
      '',
      `Time a client waits for a new conversation: from \`POST /api/v1/app-conversations\` until the start task shows READY (\`GET .../start-tasks?ids=\`), and until the agent's first event of its own (not the system prompt) shows in \`GET /api/v1/events/search\`; both polled every ${POLL_MS} ms, sequentially, ${CONVERSATIONS} conversations each. The LLM is a scripted OpenAI-compatible server on loopback that answers at once (\`test/helpers/scripted-llm.ts\`) with one tool call, so these figures are the platform's own overhead, without any model time. *Fresh*: every conversation gets a new sandbox (a new process: sandbox start, check-in, start flow), deleted after. *Reused*: every conversation passes the same \`sandbox_id\`, which already runs (up to ${CONVERSATIONS} finished conversations stay in it). The sandbox posts the agent's events in batches (10 events, or 1 s after the first) but flushes at every execution-status change; with this script the agent's first event arrives with the \`finished\` flush, while in a long turn an event can wait up to that second.`,
      '',
      '| p50 / p99 | fresh sandbox | reused sandbox |',
      '|---|---|---|',
      startRow('`POST` → start task READY', (s) => s.ready),
      startRow("`POST` → the agent's first event visible", (s) => s.firstAgentEvent),
      '',
    ].join('\n');
  } finally {
    await stop();
  }
}
