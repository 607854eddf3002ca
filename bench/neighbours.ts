import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { storedConversation, storedSandbox } from '#test/helpers/conversations.ts';
import { startTestStack } from '#test/helpers/stack.ts';
import { json } from './http.ts';
import { benchEvents } from './ingest-client.ts';
import { REPLAY_EVENTS, type NeighbourPlan } from './neighbours-client.ts';
import { count, ms, p50p99, percentile } from './stats.ts';

/** `BENCH_NEIGHBOUR_REQUESTS` shortens a quick run; the recorded run takes 2,000 victim requests per phase. */
const REQUESTS = Number(process.env.BENCH_NEIGHBOUR_REQUESTS ?? 2000);
/** How long after the floods the server's RSS is read again (reported, not a target). */
const RSS_AFTER_MS = Number(process.env.BENCH_NEIGHBOUR_RSS_AFTER_MS ?? 60_000);
/**
 * `BENCH_NEIGHBOUR_PHASES=events` (any of `sockets`, `replays`, `events`, comma-separated) runs only those
 * floods after the quiet phase, and sets up only what they need: for measuring one flood alone.
 */
const PHASES = (process.env.BENCH_NEIGHBOUR_PHASES ?? 'sockets,replays,events').split(',').map((p) => p.trim());
/**
 * `BENCH_NEIGHBOUR_CPU_PROF=<dir>` writes a CPU profile of the server's main thread during each phase
 * to `<dir>/<phase>.cpuprofile` (sampled every 100 µs; open it in Chrome's DevTools, or summarize its
 * longest synchronous blocks with `npx tsx bench/profile-blocks.ts <file>`).
 */
const CPU_PROF = process.env.BENCH_NEIGHBOUR_CPU_PROF;
const MB = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
const CLIENT = fileURLToPath(new URL('./neighbours-client.ts', import.meta.url));

/** Runs a client in a child process; `started` once a flood is at full strength; its JSON result at the end. */
function child<T>(plan: NeighbourPlan): { started: Promise<void>; result: Promise<T>; stop: () => void } {
  const proc = spawn(process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(plan)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let onStarted = () => {};
  const started = new Promise<void>((resolve) => {
    onStarted = resolve;
  });
  const result = (async () => {
    let out: T | undefined;
    for await (const line of createInterface({ input: proc.stdout! })) {
      if (line === 'started') onStarted();
      else if (line.startsWith('{')) out = JSON.parse(line) as T;
    }
    if (out === undefined) throw new Error(`the ${plan.role} client ended with no result`);
    return out;
  })();
  return { started, result, stop: () => proc.kill('SIGTERM') };
}

/** What the server's main thread did during a phase: how late its event loop ran, and its garbage collections. */
interface LoopWatch {
  delayP99: number;
  delayMax: number;
  gcMax: number;
  gcTotal: number;
  /** A settings GetItem's round trip from the server's main thread to its dynalite's worker and back, every 20 ms. */
  dbRoundTrips: number[];
}

/**
 * Watches this process's (the server's) main thread from now until the returned function is called:
 * event-loop delay (sampled every millisecond) and GC pauses, and a CPU profile when `BENCH_NEIGHBOUR_CPU_PROF` is set.
 */
async function watchLoop(phase: string): Promise<() => Promise<LoopWatch>> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const gcs: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e.duration);
  });
  observer.observe({ entryTypes: ['gc'] });
  let session: Session | undefined;
  if (CPU_PROF) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  delay.enable();
  // A small read now and then: slower than the event-loop delay says, the database's thread is what waits.
  const dbRoundTrips: number[] = [];
  let probing = true;
  const probed = (async () => {
    while (probing) {
      const t = performance.now();
      await documentClient().send(new GetCommand({ TableName: tableName('settings'), Key: { userId: 'nobody' } }));
      dbRoundTrips.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return async () => {
    probing = false;
    await probed;
    delay.disable();
    observer.disconnect();
    if (session && CPU_PROF) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(CPU_PROF, { recursive: true });
      writeFileSync(join(CPU_PROF, `${phase}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    }
    return {
      delayP99: delay.percentile(99) / 1e6,
      delayMax: delay.max / 1e6,
      gcMax: Math.max(0, ...gcs),
      gcTotal: gcs.reduce((a, b) => a + b, 0),
      dbRoundTrips,
    };
  };
}

/** A conversation record of `userId` (on `sandboxId`, if given), written straight to the store. */
const conversationOf = (userId: string, sandboxId: string | null = null) =>
  storedConversation(userId, { sandbox_id: sandboxId, execution_status: 'running' });

/**
 * One tenant floods, another's `GET /api/settings` is timed: quiet, then during each flood (1,000
 * sockets of one user; 20 `resend_all` replays of a 20,000-event conversation, each started again
 * when done; 5 sandboxes posting events as fast as their plan allows). The victim and each flood run
 * in child processes; the server (gateway, with its two dynalites in worker threads) is this process, whose main
 * heap (each dynalite's is its worker's) is measured after a forced garbage collection before and after the floods.
 */
export async function benchNeighbours(): Promise<string> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = mkdtempSync(join(tmpdir(), 'bench-neighbours-'));
  const plansFile = join(dir, 'plans.json');
  // The built-in free plan for everyone, but the replayer may hold 20 sockets on one conversation,
  // and the victim may send its requests back to back (the free plan's 600 a minute would refuse them).
  writeFileSync(
    plansFile,
    JSON.stringify({
      default_plan: 'free',
      plans: {
        free: {},
        replays: { max_stream_sockets_per_conversation: 20, max_stream_sockets_per_user: 20 },
        victim: { requests_per_user_per_minute: 1_000_000 },
      },
    }),
  );
  const stack = await startTestStack({ plansFile, sweepIntervalMs: 3_600_000 });
  try {
    const victimKey = await stack.newUser('victim');
    await stack.putOnPlan('victim', 'victim', victimKey);
    await json(stack, 'POST', '/api/settings', {
      key: victimKey,
      body: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-victim' },
    });
    const hogKey = await stack.newUser('hog');
    const hogConversation = await conversationOf('hog');
    const replayerKey = await stack.newUser('replayer');
    await stack.putOnPlan('replayer', 'replays', replayerKey);
    const replayed = await conversationOf('replayer');
    const events = new DynamoEventStore();
    if (PHASES.includes('replays'))
      for (let from = 1; from <= REPLAY_EVENTS; from += 100)
        await events.append({ userId: 'replayer', conversationId: replayed }, from, benchEvents('r', from - 1, 100));
    const sandboxes = [];
    for (let i = 0; i < 5; i++) {
      const { id, key } = await storedSandbox('poster');
      sandboxes.push({ id, key, conversationId: await conversationOf('poster', id) });
    }

    const victim = () =>
      child<{ latencies: number[]; errors: number }>({
        role: 'victim',
        url: stack.url,
        key: victimKey,
        requests: REQUESTS,
      }).result;
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const rssBefore = process.memoryUsage().rss;
    const quietWatch = await watchLoop('quiet');
    const quiet = await victim();
    const quietLoop = await quietWatch();
    const floods: { phase: string; name: string; plan: NeighbourPlan; did: (r: any) => string }[] = [
      {
        phase: 'sockets',
        name: '1,000 sockets of one user (each refused one opened again at once)',
        plan: { role: 'sockets', url: stack.url, key: hogKey, conversationId: hogConversation, sockets: 1000 },
        did: (r) =>
          `${count(r.opened)} opened, ${count(r.refused)} closed over a cap (4429), ${count(r.limited)} refused over the request rate (HTTP 429)`,
      },
      {
        phase: 'replays',
        name: `20 \`resend_all\` replays of ${count(REPLAY_EVENTS)} events, each started again when done`,
        plan: { role: 'replays', url: stack.url, key: replayerKey, conversationId: replayed, sockets: 20 },
        did: (r) => `${count(r.replays)} replays done, ${count(r.messages)} events sent`,
      },
      {
        phase: 'events',
        name: '5 sandboxes posting events as fast as allowed',
        plan: { role: 'events', url: stack.url, sandboxes },
        did: (r) => `${count(r.accepted)} events stored, ${count(r.refused)} batches refused (429)`,
      },
    ];
    const rows: string[] = [];
    const row = (name: string, v: { latencies: number[]; errors: number }, loop: LoopWatch, did: string) => {
      const p99 = percentile(v.latencies, 99);
      rows.push(
        `| ${name} | ${ms(percentile(v.latencies, 50))} | ${ms(p99)} | ${(p99 / percentile(quiet.latencies, 99)).toFixed(2)}× | ${v.errors} | ${ms(loop.delayP99)} / ${ms(loop.delayMax)} | ${ms(loop.gcMax)} | ${p50p99(loop.dbRoundTrips)} | ${did} |`,
      );
    };
    row('quiet', quiet, quietLoop, '');
    for (const flood of floods.filter((f) => PHASES.includes(f.phase))) {
      const f = child<unknown>(flood.plan);
      await f.started;
      const watch = await watchLoop(flood.phase);
      const during = await victim();
      const loop = await watch();
      f.stop();
      row(flood.name, during, loop, flood.did(await f.result));
    }
    // The floods' sockets are closed and their work done: what they left on the heap is what stays.
    await new Promise((r) => setTimeout(r, 2000));
    gc();
    const heapAfter = process.memoryUsage().heapUsed;
    const rssAfter = process.memoryUsage().rss;
    await new Promise((r) => setTimeout(r, RSS_AFTER_MS));
    const rssLater = process.memoryUsage().rss;
    return [
      '## Noisy neighbours',
      '',
      `Another tenant's \`GET /api/settings\` (${count(REQUESTS)} requests one after another per phase, from a child process, on a keep-alive connection) while one tenant floods the local stack from another child process, on the built-in \`free\` plan's caps and rates (the replayer's organization on a plan with 20 sockets per conversation, so its 20 replays all run; the victim's on one without a request rate). The local stream sends one user's sockets at most 2,000 events a second together after a burst of 20,000 (\`shared/stream/send-pacer.ts\`), and answers an open over the request rate 429 after holding it a second (\`infra/local/refusal-hold.ts\`). The server (gateway, authorizer, and two dynalites in memory, each in a worker thread of its own: the events table's, and the other tables', which the victim's reads reach) is the bench's own process; its main thread's event-loop delay (sampled every millisecond: how long a request arriving there waits before the loop turns to it), its longest garbage-collection pause, and the round trip of a small read of the settings table it sends every 20 ms (when that is slow and the loop is not, the database's thread is where requests wait) are measured in each phase. Target: p99 within 2× of quiet.`,
      '',
      '| phase | p50 | p99 | p99 / quiet p99 | victim errors | server event-loop delay p99 / max | longest GC pause | dynalite round trip p50 / p99 | what the flood did |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `Server heap used after a forced GC (its main thread; the dynalites' workers keep their own): ${MB(heapBefore)} before the floods, ${MB(heapAfter)} after (${(((heapAfter - heapBefore) / heapBefore) * 100).toFixed(1)}%; target within 10%). RSS ${MB(rssBefore)} before, ${MB(rssAfter)} right after, ${MB(rssLater)} ${(RSS_AFTER_MS / 1000).toFixed(0)} s later (reported, not a target: V8 and the allocator keep freed pages a while).`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
