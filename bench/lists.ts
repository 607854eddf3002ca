import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { COUNTER_ID } from '#shared/conversations/dynamo-conversation-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { batchPut } from '#shared/store/query.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack } from '#test/helpers/agent-stack.ts';
import { json } from './http.ts';
import { count, interleaved, ms, percentile, time } from './stats.ts';

const SMALL = 100;
/** `BENCH_LIST_ROWS` makes a quick run smaller; the recorded run uses 100,000. */
const LARGE = Number(process.env.BENCH_LIST_ROWS ?? 100_000);
const RUNS = 200;
const step = (what: string) => process.stderr.write(`bench: lists: ${what}\n`);

/** Writes `n` copies of a real item under new ids for `userId`, 4 BatchWriteItem calls of 25 in flight per 100. */
async function clone(
  table: string,
  template: Record<string, unknown>,
  userId: string,
  n: number,
  make: (i: number) => Record<string, unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
        const from = next;
        next = Math.min(n, next + 100);
        await batchPut(
          table,
          Array.from({ length: next - from }, (_, k) => ({ ...template, userId, ...make(from + k) })),
        );
      }
    }),
  );
}

/**
 * List routes at 100 rows vs 100,000 rows of one user (sandboxes, conversations): the records are
 * copies of a real sandbox's and conversation's items written straight to the tables, each user's
 * newest first page and its second page timed side by side (`interleaved`), and the counts.
 */
export async function benchLists(): Promise<string> {
  const { stack, stop } = await startAgentStack({ stack: { sweepIntervalMs: 3_600_000 } });
  try {
    // One real conversation on a real sandbox: their items are the templates.
    const task = await json(stack, 'POST', '/api/v1/app-conversations', { body: {} });
    const ready = await waitFor(
      'the template conversation',
      async () => {
        const [t] = await json(stack, 'GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`);
        return t.status === 'READY' ? t : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 50 },
    );
    await json(stack, 'POST', `/api/v1/sandboxes/${ready.sandbox_id}/pause`);
    const db = documentClient();
    const sandboxTable = tableName('sandboxes');
    const conversationTable = tableName('conversations');
    const sandbox = (await db.send(new GetCommand({ TableName: sandboxTable, Key: { id: ready.sandbox_id } }))).Item!;
    const conversation = (
      await db.send(
        new GetCommand({ TableName: conversationTable, Key: { userId: 'dev', id: ready.app_conversation_id } }),
      )
    ).Item!;
    const users = { small: await stack.newUser('list-small'), large: await stack.newUser('list-large') };
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const at = (i: number) => new Date(t0 + i * 1000).toISOString();
    step(`writing ${count(SMALL)} + ${count(LARGE)} sandboxes and conversations`);
    const fillMs = await time(async () => {
      for (const [user, n] of [
        ['list-small', SMALL],
        ['list-large', LARGE],
      ] as const) {
        const sid = (i: number) => `${user}-sbx-${i}`;
        await clone(sandboxTable, sandbox, user, n, (i) => ({
          id: sid(i),
          createdAt: at(i),
          updatedAt: at(i),
          lastActivityAt: at(i),
        }));
        await clone(conversationTable, conversation, user, n, (i) => ({
          id: `${i.toString(16).padStart(32, '0')}`,
          sandbox_id: sid(i),
          createdAt: at(i),
          updatedAt: at(i),
        }));
        // The copies bypass the store, so their counter item is written as the store would have kept it.
        await db.send(
          new PutCommand({
            TableName: conversationTable,
            Item: { userId: user, id: COUNTER_ID, conversations: n, started: true },
          }),
        );
      }
    });

    const get = (key: string, path: string) => async () => {
      const res = await fetch(`${stack.url}${path}`, { headers: { 'x-session-api-key': key } });
      if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
      return res.json();
    };
    const second = async (key: string, path: string) => {
      const page = (await get(key, path)()) as { next_page_id: string | null };
      if (!page.next_page_id) throw new Error(`${path}: no second page`);
      return `${path}&page_id=${encodeURIComponent(page.next_page_id)}`;
    };
    const routes = [
      ['`GET /api/v1/sandboxes/search?limit=100`', '/api/v1/sandboxes/search?limit=100'],
      ['`GET /api/v1/app-conversations/search?limit=100`', '/api/v1/app-conversations/search?limit=100'],
      // Every copy's title is the template's ("Conversation …"): a filtered page that fills in one Query.
      [
        '`GET /api/v1/app-conversations/search?limit=100&title__contains=conversation`',
        '/api/v1/app-conversations/search?limit=100&title__contains=conversation',
      ],
    ] as const;
    const fns: Record<string, () => Promise<unknown>> = {};
    for (const [name, path] of routes) {
      fns[`${name} first|small`] = get(users.small, path);
      fns[`${name} first|large`] = get(users.large, path);
      fns[`${name} second|large`] = get(users.large, await second(users.large, path));
    }
    fns['count|small'] = get(users.small, '/api/v1/app-conversations/count');
    fns['count|large'] = get(users.large, '/api/v1/app-conversations/count');
    // This process's CPU time per request too (client, gateway, handler and dynalite all run here): the
    // other processes of a shared machine move it far less than the wall clock.
    const cpu: Record<string, number[]> = {};
    const timed = Object.fromEntries(
      Object.entries(fns).map(([k, fn]) => [
        k,
        async () => {
          const c0 = process.cpuUsage();
          await fn();
          const c = process.cpuUsage(c0);
          cpu[k] ??= [];
          cpu[k].push((c.user + c.system) / 1000);
        },
      ]),
    );
    step('timing');
    const m = await interleaved(RUNS, timed);
    // The 20 warm-up rounds' CPU samples go too.
    const c = Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v.slice(20)]));
    const largeCount = (await get(users.large, '/api/v1/app-conversations/count')()) as number;
    if (largeCount !== LARGE) throw new Error(`count says ${largeCount} of ${LARGE}`);
    // A filter cannot use the counter: it counts its matches on the index, page by page.
    const filteredPath = '/api/v1/app-conversations/count?created_at__gte=2000-01-01T00:00:00Z';
    if (((await get(users.large, filteredPath)()) as number) !== LARGE) throw new Error('the filtered count disagrees');
    const filteredMs = await time(get(users.large, filteredPath));
    const p50 = (k: string) => percentile(m[k]!, 50);
    const cpu50 = (k: string) => percentile(c[k]!, 50);
    const rows = routes.map(([name]) => {
      const [small, large] = [p50(`${name} first|small`), p50(`${name} first|large`)];
      const [cpuSmall, cpuLarge] = [cpu50(`${name} first|small`), cpu50(`${name} first|large`)];
      return `| ${name} | ${ms(small)} | ${ms(large)} | ${(large / small).toFixed(2)}× | ${ms(cpuSmall)} / ${ms(cpuLarge)} (${(cpuLarge / cpuSmall).toFixed(2)}×) | ${ms(p50(`${name} second|large`))} |`;
    });
    return [
      `## List routes at ${count(SMALL)} and at ${count(LARGE)} rows`,
      '',
      `A user with ${count(SMALL)} sandboxes and conversations, another with ${count(LARGE)}: copies of a real (paused) sandbox's and conversation's items written straight to the tables (${(fillMs / 1000).toFixed(0)} s), newest first. ${RUNS} rounds after 20 warm-up ones, every measure once per round in an order shuffled each round (see \`interleaved\`); the CPU time is this process's (the client, the gateway, the handler and dynalite all run in it) for one request. A page is one Query on the user's \`byUser\` index with the page's limit (and, for conversations, one BatchGetItem of their sandboxes' statuses), so its cost is the page's, not the user's: nothing in it reads past the page, and dynalite keeps every table in one sorted tree, so both users' pages walk the same tree. A filter other than \`created_at\` applies after DynamoDB's read limit, so a filtered page reads on (a Query of the page's size, then up to 9 of 200 items) until it is full.`,
      '',
      `| route (first page of 100) | ${count(SMALL)} rows p50 | ${count(LARGE)} rows p50 | ratio | CPU time p50, ${count(SMALL)} / ${count(LARGE)} rows | second page at ${count(LARGE)} p50 |`,
      '|---|---|---|---|---|---|',
      ...rows,
      '',
      `\`GET /api/v1/app-conversations/count\` without a filter reads the user's counter item (one GetItem; see docs/data-model.md): p50 ${ms(p50('count|small'))} at ${count(SMALL)} conversations, ${ms(p50('count|large'))} at ${count(LARGE)} (${(p50('count|large') / p50('count|small')).toFixed(2)}×; CPU time ${(cpu50('count|large') / cpu50('count|small')).toFixed(2)}×). With a filter it counts the matches on the index (a keys-only Query, page by page), so it grows with them: once ${ms(filteredMs, 0)} for \`created_at__gte\` matching all ${count(LARGE)}. Events' lists and counts are in the events sections above.`,
      '',
    ].join('\n');
  } finally {
    await stop();
  }
}
