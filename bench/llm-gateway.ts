import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchWithKey } from '#sandbox/agent/llm-credential.ts';
import { protocolPaths } from '#shared/protocol.ts';
import { startTestStack } from '#test/helpers/stack.ts';
import { untilReady } from './conversations.ts';
import { json } from './http.ts';
import { p50p99, percentile } from './stats.ts';

const SAMPLES = Number(process.env.LLM_BENCH_SAMPLES ?? 200);
const KEY = 'sk-bench-platform';

/**
 * `npm run bench -- llm`: the LLM gateway's cost to a stream's first token (docs/platform-llms.md: at
 * most 50 ms p50 added locally). A scripted upstream on loopback writes its first chunk as soon as a
 * request arrives; the time to that chunk is measured straight from the upstream and through the
 * gateway (credential check, revocation reads, rate, reservation, forwarding), side by side, the
 * gateway's calls made with the agent's own fetch (sandbox/agent/llm-credential.ts) from the host's
 * loopback, which is the network a local sandbox reaches the gateway on.
 */
export async function benchLlmGateway(): Promise<string> {
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 1 } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  const dir = mkdtempSync(join(tmpdir(), 'bench-llm-'));
  writeFileSync(
    join(dir, 'llms.json'),
    JSON.stringify([
      {
        model: 'platform/bench',
        provider: 'openai',
        upstream_model: 'bench',
        base_url: base,
        api_key_env: 'BENCH_PLATFORM_KEY',
        usd_per_mtok: { input: 1, output: 1 },
        max_output_tokens: 100,
      },
    ]),
  );
  writeFileSync(
    join(dir, 'plans.json'),
    JSON.stringify({
      default_plan: 'b',
      plans: {
        b: {
          max_running_sandboxes: 10,
          monthly_spend_usd: 1_000_000,
          platform_models: ['platform/bench'],
          llm_requests_per_minute: 1_000_000,
          llm_tokens_per_minute: 1_000_000_000,
        },
      },
    }),
  );
  process.env.BENCH_PLATFORM_KEY = KEY;
  const stack = await startTestStack({
    sweepIntervalMs: 3_600_000,
    platformLlmsFile: join(dir, 'llms.json'),
    plansFile: join(dir, 'plans.json'),
  });
  try {
    await json(stack, 'POST', '/api/settings', { body: { llm_model: 'platform/bench' } });
    const task = await untilReady(stack, (await json(stack, 'POST', '/api/v1/app-conversations', { body: {} })).id);
    const path = protocolPaths.startConfig
      .replace('{sandbox_id}', task.sandbox_id)
      .replace('{conversation_id}', task.app_conversation_id);
    const config = await fetch(`${stack.url}${path}`, {
      headers: { 'x-session-api-key': (await stack.sandboxKey(task.sandbox_id))! },
    }).then((r) => r.json() as Promise<any>);
    const body = JSON.stringify({ model: 'platform/bench', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    // Through the gateway with the sandbox's own fetch (its credential headers and the body's SHA-256, as the agent sends them).
    const agentFetch = fetchWithKey(async () => config.llm.api_key);
    const firstChunk = async (url: string, key: string) => {
      const t = performance.now();
      const res = await (key === KEY ? fetch : agentFetch)(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
      const reader = res.body!.getReader();
      await reader.read();
      const took = performance.now() - t;
      while (!(await reader.read()).done);
      return took;
    };
    const direct: number[] = [];
    const gateway: number[] = [];
    for (let i = 0; i < SAMPLES + 10; i++) {
      const d = await firstChunk(`${base}/chat/completions`, KEY);
      const g = await firstChunk(`${stack.url}/llm/v1/chat/completions`, config.llm.api_key);
      if (i >= 10) {
        direct.push(d);
        gateway.push(g);
      }
    }
    return [
      '## LLM gateway: first token',
      '',
      `${SAMPLES} streamed calls each way, the upstream answering at once (p50 / p99).`,
      '',
      '| path | first chunk |',
      '|---|---|',
      `| straight to the upstream | ${p50p99(direct)} |`,
      `| through the gateway | ${p50p99(gateway)} |`,
      `| added by the gateway (p50) | ${(percentile(gateway, 50) - percentile(direct, 50)).toFixed(2)} ms |`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
    upstream.close();
  }
}
