import { startTestStack } from '#test/helpers/stack.ts';
import { keepAliveClient } from './http.ts';
import { count, ms, percentile } from './stats.ts';

const CLIENTS = 50;
/** `BENCH_LOAD_SECONDS` shortens a quick run; the recorded run is 5 minutes. */
const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 300);
const MB = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;

/**
 * `GET /api/settings` from 50 concurrent clients (keep-alive connections) for 5 minutes against the
 * local stack: throughput, latency and the process's memory over the run (one process holds the
 * gateway, dynalite and the clients, so its RSS is all of it).
 */
export async function benchLoad(): Promise<string> {
  const stack = await startTestStack();
  const client = keepAliveClient(stack.url, CLIENTS);
  try {
    const headers = { 'x-session-api-key': stack.devKey, 'content-type': 'application/json' };
    if (
      (await client.send(
        'POST',
        '/api/settings',
        headers,
        JSON.stringify({ llm_model: 'openai/gpt-4o', llm_api_key: 'sk-load' }),
      )) !== 200
    )
      throw new Error('POST /api/settings failed');
    const latencies: number[] = [];
    let errors = 0;
    const memory: { at: number; rss: number; heap: number }[] = [];
    const started = performance.now();
    const end = started + SECONDS * 1000;
    const sampleMemory = () =>
      memory.push({
        at: (performance.now() - started) / 1000,
        rss: process.memoryUsage().rss,
        heap: process.memoryUsage().heapUsed,
      });
    sampleMemory();
    const sampler = setInterval(sampleMemory, Math.max(1000, (SECONDS * 1000) / 10));
    const cpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          const status = await client.send('GET', '/api/settings', headers);
          latencies.push(performance.now() - t);
          if (status !== 200) errors++;
        }
      }),
    );
    clearInterval(sampler);
    sampleMemory();
    const wall = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const perSecond = latencies.length / wall;
    const first = memory[1] ?? memory[0]!;
    const last = memory.at(-1)!;
    return [
      `## GET /api/settings under load (${CLIENTS} clients, ${SECONDS >= 60 ? `${(SECONDS / 60).toFixed(SECONDS % 60 ? 1 : 0)} min` : `${SECONDS} s`})`,
      '',
      `${CLIENTS} concurrent clients on keep-alive connections over loopback, each sending its next \`GET /api/settings\` when the last is answered, against the local stack (gateway, authorizer with its key cache, dynalite in memory, all in the one Node process that also runs the clients, so it shares one core's worth of JavaScript with them). Memory is that process's, sampled ${memory.length} times.`,
      '',
      '| requests | errors | req/s | p50 | p99 | CPU (user + system) |',
      '|---|---|---|---|---|---|',
      `| ${count(latencies.length)} | ${errors} | ${count(perSecond)} | ${ms(percentile(latencies, 50))} | ${ms(percentile(latencies, 99))} | ${((used.user + used.system) / 1e6 / wall).toFixed(2)} cores |`,
      '',
      `RSS ${memory.map((m) => `${m.at.toFixed(0)} s ${MB(m.rss)}`).join(', ')}; from the first sample after the start to the end ${MB(first.rss)} → ${MB(last.rss)} (heap used ${MB(first.heap)} → ${MB(last.heap)}).`,
      '',
    ].join('\n');
  } finally {
    client.close();
    await stack.stop();
  }
}
