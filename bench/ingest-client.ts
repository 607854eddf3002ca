import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { keepAliveClient } from './http.ts';

/** Bash observations of about half a kilobyte (a typical agent event); every `rareEvery`-th by number a MessageEvent. */
export function benchEvents(tag: string, from: number, n: number, rareEvery = 0): AgentEventEnvelope[] {
  const output = 'total 48\ndrwxr-xr-x  6 agent agent 4096 src\n-rw-r--r--  1 agent agent 1062 package.json\n'.repeat(
    3,
  );
  return Array.from({ length: n }, (_, k) => ({
    kind: rareEvery && (from + k + 1) % rareEvery === 0 ? 'MessageEvent' : 'ObservationEvent',
    id: `${tag}-${from + k}`,
    timestamp: new Date().toISOString(),
    source: 'environment' as const,
    tool_name: 'execute_bash',
    tool_call_id: `call_${from + k}`,
    observation: {
      kind: 'ExecuteBashObservation',
      content: [{ type: 'text', text: output }],
      command: 'ls -l',
      exit_code: 0,
    },
  }));
}

/** Unmeasured batches first: the server's handler path is compiled and warm before the clock starts. */
export const WARMUP_BATCHES = 5;

/** What an ingest run posts: `clients` loops of `batches` batches of `batchSize` events, numbered after `base`. */
export interface IngestPlan {
  url: string;
  sandboxId: string;
  key: string;
  cid: string;
  batchSize: number;
  batches: number;
  clients: number;
  base: number;
  /**
   * Each batch ends with the agent's LLM usage report (a `metrics` state update, cumulative, for a model of
   * the user's own key), as the agent's batch after an LLM call does: the one event ingest meters.
   */
  reports?: boolean;
}

/** The agent's cumulative report after its `n`-th LLM call (shared/conversations/bridge.ts, `agentMetricsOf`). */
export function benchReport(tag: string, seq: number, n: number): AgentEventEnvelope {
  return {
    kind: 'ConversationStateUpdateEvent',
    id: `${tag}-${seq}`,
    timestamp: new Date().toISOString(),
    source: 'environment',
    key: 'metrics',
    value: {
      model: 'scripted-model',
      llm_calls: n,
      prompt_tokens: 1000 * n,
      completion_tokens: 100 * n,
      accumulated_cost: 0.001 * n,
    },
  } as unknown as AgentEventEnvelope;
}

/** Where the posting client ran, and what it measured. */
export interface IngestRun {
  wallMs: number;
  batchMs: number[];
  /** CPU time of the posting client alone (its own process), or undefined when it shared the server's process. */
  clientCpuMs?: number;
}

/**
 * Posts `WARMUP_BATCHES` batches, calls `started`, then the plan in rounds: each client posts one batch, the
 * clients taking turns in the numbering (so batches land a little ahead of each other), and the next
 * round starts when all are answered. One keep-alive connection per client (node:http: fetch
 * would charge its own ~0.3 ms a request to the figure).
 */
export async function postBatches(plan: IngestPlan, started: () => void = () => {}): Promise<IngestRun> {
  const http = keepAliveClient(plan.url, plan.clients);
  const tag = `ingest-${plan.batchSize}-${plan.clients}`;
  const post = async (k: number) => {
    const events = benchEvents(tag, k * plan.batchSize, plan.batchSize);
    if (plan.reports) events[events.length - 1] = benchReport(tag, (k + 1) * plan.batchSize - 1, k + 1);
    const body = JSON.stringify(events);
    const path = `/api/v1/webhooks/${plan.sandboxId}/events/${plan.cid}?first_seq=${plan.base + k * plan.batchSize + 1}`;
    const status = await http.send(
      'POST',
      path,
      { 'x-session-api-key': plan.key, 'content-type': 'application/json' },
      body,
    );
    if (status !== 200) throw new Error(`${path}: HTTP ${status}`);
  };
  try {
    for (let k = 0; k < WARMUP_BATCHES; k++) await post(k);
    started();
    const batchMs: number[] = [];
    const t = performance.now();
    // In rounds: a client that ran ahead of a slow one would leave a gap wider than the server's window.
    for (let b = 0; b < plan.batches; b++) {
      await Promise.all(
        Array.from({ length: plan.clients }, async (_, c) => {
          const s = performance.now();
          await post(WARMUP_BATCHES + b * plan.clients + c);
          batchMs.push(performance.now() - s);
        }),
      );
    }
    return { wallMs: performance.now() - t, batchMs };
  } finally {
    http.close();
  }
}

/**
 * Runs `postBatches` in a child process (`node --import tsx` of this file), so the client's CPU is
 * not the server's: `started` is called when its warm-up batches are answered, and the result is the
 * child's, with its own CPU time.
 */
export async function postBatchesFromChild(plan: IngestPlan, started: () => void): Promise<IngestRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(plan)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let result: IngestRun | undefined;
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line === 'started') started();
    else if (line.startsWith('{')) result = JSON.parse(line) as IngestRun;
  }
  const code = await exited;
  if (code !== 0 || !result) throw new Error(`the ingest client exited with ${code} and no result`);
  return result;
}

// As the child: the plan in argv, lines on stdout.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const plan = JSON.parse(process.argv[2]!) as IngestPlan;
  let cpu = process.cpuUsage();
  const run = await postBatches(plan, () => {
    cpu = process.cpuUsage();
    process.stdout.write('started\n');
  });
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${JSON.stringify({ ...run, clientCpuMs: (used.user + used.system) / 1000 })}\n`);
}
