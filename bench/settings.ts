import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { startTestStack } from '#test/helpers/stack.ts';
import { ms, percentile, sample } from './stats.ts';

const RUNS = 500;

/** Settings through the whole local path (HTTP, gateway, authorizer, wrapper, sealing) vs a bare GetItem. */
export async function benchSettings(): Promise<string> {
  const stack = await startTestStack();
  try {
    const headers = { 'x-session-api-key': stack.devKey, 'content-type': 'application/json' };
    const body = JSON.stringify({ llm_model: 'openai/gpt-4o', llm_api_key: 'sk-bench', max_iterations: 50, mcp_config: { stdio_servers: [{ name: 'a', command: 'b', env: { K: 'v' } }] } });
    const post = await sample(RUNS, async () => {
      const res = await fetch(`${stack.url}/api/settings`, { method: 'POST', headers, body });
      if (res.status !== 200) throw new Error(`POST ${res.status}`);
      await res.arrayBuffer();
    });
    const get = await sample(RUNS, async () => {
      const res = await fetch(`${stack.url}/api/settings`, { headers });
      if (res.status !== 200) throw new Error(`GET ${res.status}`);
      await res.arrayBuffer();
    });
    const db = documentClient();
    const table = tableName('settings');
    const raw = await sample(RUNS, () => db.send(new GetCommand({ TableName: table, Key: { userId: 'dev' }, ConsistentRead: true })));
    const row = (name: string, s: number[]) => `| ${name} | ${ms(percentile(s, 50))} | ${ms(percentile(s, 99))} | ${(percentile(s, 50) / percentile(raw, 50)).toFixed(1)}× |`;
    return [
      '## Settings through the local gateway',
      '',
      `${RUNS} sequential requests each after ${Math.min(20, RUNS)} warm-up ones, dynalite in memory, one client on loopback. The ratio is p50 against a raw dynalite GetItem from the same process: what the gateway, authorizer (a GetItem of its own), wrapper, validation and sealing add.`,
      '',
      '| operation | p50 | p99 | p50 / raw GetItem |',
      '|---|---|---|---|',
      row('GET /api/settings', get),
      row('POST /api/settings', post),
      row('raw dynalite GetItem', raw),
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
