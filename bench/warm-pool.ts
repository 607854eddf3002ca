import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import { reply, startScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { untilReady } from './conversations.ts';
import { json } from './http.ts';
import { ms as msDigits, p50p99, percentile } from './stats.ts';

/** Starts measured (BENCH_POOL_STARTS for a quick check of the section). */
const STARTS = Number(process.env.BENCH_POOL_STARTS ?? 40);
const ms = (n: number) => msDigits(n, 0);

/** The default spec's ready standby, once the refill after the last claim has one checked in (unmeasured). */
async function standbyReady(): Promise<void> {
  await waitFor(
    'a ready standby',
    async () =>
      (await new DynamoPoolStore().listStandbys('local-default')).some((s) => s.status === 'ready') ? true : undefined,
    { timeoutMs: 30_000, intervalMs: 10 },
  );
}

async function untilRunning(
  stack: TestStack,
  id: string,
): Promise<{ start_phases: { warm: boolean; requested_at: string } & Record<string, number> }> {
  return waitFor(
    `sandbox ${id} to be RUNNING`,
    async () => {
      const [s] = await json(stack, 'GET', `/api/v1/sandboxes?id=${id}`);
      if (s.status === 'RUNNING') return s;
      if (s.status !== 'STARTING') throw new Error(`sandbox ${id} is ${s.status}: ${s.detail}`);
      return undefined;
    },
    { timeoutMs: 60_000, intervalMs: 10 },
  );
}

const isAgentReply = (e: { source?: string; kind?: string }) => e.source === 'agent' && e.kind !== 'SystemPromptEvent';

/**
 * A conversation start with its first message whose new sandbox a standby serves: `POST
 * /api/v1/app-conversations` until the agent's first event of its own shows in the events search
 * (polled every 10 ms), as bench/conversations.ts times a fresh sandbox's; the LLM answers at once.
 * Returns the time, or undefined when the sandbox started cold (no standby was ready).
 */
async function conversationFromPool(stack: TestStack): Promise<number | undefined> {
  const t = performance.now();
  const task = await json(stack, 'POST', '/api/v1/app-conversations', {
    body: { initial_message: { role: 'user', content: [{ type: 'text', text: 'Finish at once.' }], run: true } },
  });
  const ready = await untilReady(stack, task.id);
  const cid = ready.app_conversation_id as string;
  await waitFor(
    `the agent's first event in ${cid}`,
    async () => (await json(stack, 'GET', `/api/v1/events/search?conversation_id__eq=${cid}`)).items.find(isAgentReply),
    { timeoutMs: 60_000, intervalMs: 10 },
  );
  const elapsed = performance.now() - t;
  const [sandbox] = await json(stack, 'GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`);
  await json(stack, 'DELETE', `/api/v1/sandboxes/${ready.sandbox_id}`);
  return sandbox.start_phases?.warm ? elapsed : undefined;
}

/**
 * Local starts served by the warm pool (`npm start`'s pool of 1): start → RUNNING when a standby is
 * ready, with the claim and the standby's acknowledged binding as phases of their own.
 */
export async function benchWarmPool(): Promise<string> {
  const stack = await startTestStack({ sweepIntervalMs: 3_600_000, warmPoolSize: 1 });
  try {
    const total: number[] = [];
    const seen: number[] = [];
    const claim: number[] = [];
    const checkIn: number[] = [];
    let cold = 0;
    // One unmeasured start warms the handlers and the page cache.
    for (let i = -1; i < STARTS; i++) {
      await standbyReady();
      const sentAt = Date.now();
      const t = performance.now();
      const { id } = await json(stack, 'POST', '/api/v1/sandboxes');
      const s = await untilRunning(stack, id);
      const elapsed = performance.now() - t;
      // The record's RUNNING instant (its request time plus `total_ms`), on the clock of this process, which is the server's.
      const phases = s.start_phases;
      const runningAt = Date.parse(phases.requested_at) + phases.total_ms!;
      await json(stack, 'DELETE', `/api/v1/sandboxes/${id}`);
      if (i < 0) continue;
      if (!s.start_phases.warm) {
        cold++;
        continue;
      }
      total.push(runningAt - sentAt);
      seen.push(elapsed);
      claim.push(phases.claim_ms!);
      checkIn.push(phases.check_in_ms!);
    }
    if (!total.length) throw new Error('bench: no start was served by the pool');
    // Conversation starts whose sandbox a standby serves, to the agent's first event (one unmeasured first).
    const llm = await startScriptedLlm();
    const conversations: number[] = [];
    let coldConversations = 0;
    try {
      await json(stack, 'POST', '/api/settings', {
        body: { llm_model: 'scripted-model', llm_api_key: 'sk-bench', llm_base_url: llm.baseUrl },
      });
      for (let i = -1; i < STARTS; i++) {
        await standbyReady();
        llm.enqueue(reply.finish('Done.'));
        const elapsed = await conversationFromPool(stack);
        if (i < 0) continue;
        if (elapsed === undefined) coldConversations++;
        else conversations.push(elapsed);
      }
    } finally {
      await llm.close();
    }
    if (!conversations.length) throw new Error('bench: no conversation start was served by the pool');
    return [
      '## Sandboxes from the warm pool (local)',
      '',
      'The default spec with a pool of 1, as `npm start` keeps it: before each start the refill after the last claim',
      "(locally a second after it, so the new standby's process start does not take the cores the claimed one's",
      'check-in needs) has a standby checked in (unmeasured; a standby checks in once it has loaded the agent); the start claims it (one conditional write), renames its directory into',
      "the sandbox's and pushes the binding (the standby's pending wait, woken in process, takes it in one conditional",
      "write), which the program exchanges at the sandbox's check-in. A start is",
      '`POST /api/v1/sandboxes` until the record is RUNNING: its `start_phases` give that instant (`requested_at` plus',
      "`total_ms`, on this process's clock, which is the server's), and a client polling `GET` every 10 ms sees it",
      "up to a poll (and that GET's own time) later; each poll is also load on the two cores the start shares. The claim and the check-in after it",
      `are the start's own phases (\`start_phases\`). The conversation's agent posts its events and reports each status change without waiting for the post before its next step. Targets: start → RUNNING at most 60 ms p50, a conversation's first agent event at most 250 ms p50. ${cold ? `${cold} of ${STARTS} starts found no standby and are left out.` : ''}`,
      '',
      '| Measure | Value |',
      '|---|---|',
      `| start → RUNNING from the pool, p50 / p99 of ${total.length} | ${p50p99(total, 0)} |`,
      `| start → RUNNING seen by the client's poll, p50 / p99 | ${p50p99(seen, 0)} |`,
      `| of which the claim (\`claim_ms\`), p50 | ${ms(percentile(claim, 50))} |`,
      `| of which claim → acknowledged binding (\`check_in_ms\`), p50 | ${ms(percentile(checkIn, 50))} |`,
      `| conversation start → the agent's first event, its sandbox from the pool, p50 / p99 of ${conversations.length}${coldConversations ? ` (${coldConversations} cold left out)` : ''} | ${p50p99(conversations, 0)} |`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
