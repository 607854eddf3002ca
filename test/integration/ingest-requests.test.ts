import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIVITY_WRITE_MS } from '#shared/conversations/bridge.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { fillPath, type AgentEventEnvelope } from '#shared/protocol.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { documentClient, tableName, UNCHECKED_SIGNATURE } from '#shared/store/dynamo.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { storedConversation, storedSandbox } from '#test/helpers/conversations.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

// What one events batch on the bridge costs in DynamoDB requests, counted at the document client against
// dynalite, over HTTP through the local gateway. The sandbox and its conversation are written
// straight to their tables, so no sandbox program polls or heartbeats while a batch is counted.
let stack: TestStack;
const sandboxId = `sbx-count-${randomUUID().slice(0, 8)}`;
const conversationId = randomUUID().replaceAll('-', '');
/** Another conversation on the sandbox, for the tests of how a batch is sent (the counts above keep their numbers). */
const secondConversation = randomUUID().replaceAll('-', '');
const key = `sbx_${randomUUID().replaceAll('-', '')}`;
const userId = 'ingest-counter';
/** `Command@table` of every request sent while this is set. */
let sent: string[] | undefined;
/** Awaited before each request is sent, while set (to hold one at a chosen point). */
let hold: ((input: Record<string, unknown>) => Promise<void>) | undefined;

beforeAll(async () => {
  stack = await startTestStack({ sweepIntervalMs: 3_600_000 });
  await storedSandbox(userId, { id: sandboxId, key });
  await storedConversation(userId, { id: conversationId, sandbox_id: sandboxId });
  await storedConversation(userId, { id: secondConversation, sandbox_id: sandboxId });
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; RequestItems?: Record<string, unknown> };
      const table = input.TableName ?? Object.keys(input.RequestItems ?? {}).join('+');
      sent?.push(`${context.commandName}@${table.replace(/^acs-/, '')}`);
      await hold?.(args.input as Record<string, unknown>);
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
});
afterAll(async () => {
  documentClient().middlewareStack.remove('countRequests');
  await stack?.stop();
});

let made = 0;
const events = (n: number) =>
  Array.from({ length: n }, () => ({
    kind: 'MessageEvent',
    id: `e-${++made}`,
    timestamp: new Date().toISOString(),
    source: 'agent',
    llm_message: { role: 'assistant', content: [{ type: 'text', text: `m${made}` }] },
  }));

/** Any route as the sandbox: its answer and the requests it made, sorted. */
async function countedCall(
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  k = key,
): Promise<{ status: number; body: unknown; requests: string[] }> {
  sent = [];
  try {
    const res = await stack.call(method, path, { key: k, body });
    return { status: res.status, body: res.body, requests: sent.sort() };
  } finally {
    sent = undefined;
  }
}

/** Posts a batch as the sandbox and returns the requests it made, sorted. */
const counted = (firstSeq: number, batch: unknown[], k = key, cid = conversationId) =>
  countedCall(
    'POST',
    `${fillPath('events', { sandbox_id: sandboxId, conversation_id: cid })}?first_seq=${firstSeq}`,
    batch,
    k,
  );

describe('one events batch on the bridge in DynamoDB requests', () => {
  it('a batch of 100 reads the sandbox, the conversation and the counter once each, writes 4 BatchWriteItems and two counter updates (the charge before, the commit after)', async () => {
    const first = await counted(1, events(100));
    expect(first.body).toEqual({ success: true, added: 100 });
    const second = await counted(101, events(100));
    expect(second.body).toEqual({ success: true, added: 100 });
    for (const { requests } of [first, second]) {
      expect(requests).toEqual([
        ...Array(4).fill('BatchWriteItemCommand@events'),
        'GetItemCommand@conversations',
        'GetItemCommand@events',
        'GetItemCommand@sandboxes',
        // The rate bucket's charge, before anything is stored (a refused batch stores nothing), and the commit.
        'UpdateItemCommand@events',
        'UpdateItemCommand@events',
      ]);
    }
  });

  it("builds a batch's four BatchWriteItems each in a turn of the event loop of its own, all four in flight together", async () => {
    // Turns of the loop, counted by an immediate that schedules the next: what other requests get between the writes.
    let turn = 0;
    let counting = true;
    const tick = () => {
      turn++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    // Each write is held until all four are sent: writes sent one after another would never get there.
    const turns: number[] = [];
    let allSent!: () => void;
    const four = new Promise<void>((r) => (allSent = r));
    hold = async (input) => {
      if (!('RequestItems' in input)) return;
      turns.push(turn);
      if (turns.length === 4) allSent();
      await Promise.race([
        four,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('the writes were not in flight together')), 5_000),
        ),
      ]);
    };
    try {
      const res = await counted(1, events(100), key, secondConversation);
      expect(res.body).toEqual({ success: true, added: 100 });
    } finally {
      hold = undefined;
      counting = false;
    }
    expect(turns).toHaveLength(4);
    expect(new Set(turns).size).toBe(4);
  });

  it("builds no masked copy of a request or its answer for the SDK's log, which drops them", async () => {
    // What the SDK's log middleware would call to mask a request and its answer (for a logger that has `info` or `error`).
    let filtered = 0;
    const count = (x: unknown) => {
      filtered++;
      return x;
    };
    documentClient().middlewareStack.add(
      (next, context) => async (args) => {
        Object.assign(context, {
          inputFilterSensitiveLog: count,
          outputFilterSensitiveLog: count,
          dynamoDbDocumentClientOptions: {
            overrideInputFilterSensitiveLog: count,
            overrideOutputFilterSensitiveLog: count,
          },
        });
        return next(args);
      },
      { step: 'initialize', name: 'countLogFilters' },
    );
    try {
      const res = await counted(101, events(100), key, secondConversation);
      expect(res.body).toEqual({ success: true, added: 100 });
      expect(res.requests.length).toBeGreaterThanOrEqual(9);
    } finally {
      documentClient().middlewareStack.remove('countLogFilters');
    }
    expect(filtered).toBe(0);
  });

  it('signs no request to the local dynalite (which checks that a signature has its parts, never the signature)', async () => {
    const signed: string[] = [];
    documentClient().middlewareStack.add(
      (next) => async (args) => {
        const headers = (args.request as { headers: Record<string, string> }).headers;
        signed.push(`${headers.authorization} at ${headers['x-amz-date']}`);
        return next(args);
      },
      // After the signing middleware (finalizeRequest), as the request is sent.
      { step: 'deserialize', name: 'seeSignatures' },
    );
    try {
      const res = await counted(201, events(100), key, secondConversation);
      expect(res.body).toEqual({ success: true, added: 100 });
    } finally {
      documentClient().middlewareStack.remove('seeSignatures');
    }
    expect(signed.length).toBeGreaterThanOrEqual(9);
    expect(new Set(signed)).toEqual(
      new Set([`${UNCHECKED_SIGNATURE.authorization} at ${UNCHECKED_SIGNATURE['x-amz-date']}`]),
    );
  });

  it('reads the conversation and the counter together (one round trip, not two), and writes nothing before both are answered', async () => {
    // The conversation's read is held until the counter's read is sent: sequential reads would never get there.
    let counterSent!: () => void;
    const counterRead = new Promise<void>((r) => (counterSent = r));
    const order: string[] = [];
    hold = async (input) => {
      const table = String(input.TableName ?? Object.keys((input.RequestItems as object) ?? {})[0]);
      if (table.endsWith('-conversations')) {
        await Promise.race([
          counterRead,
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('the counter was not read beside the conversation')), 5_000),
          ),
        ]);
        order.push('conversation answered');
      } else if (table.endsWith('-events') && 'Key' in input && !('UpdateExpression' in input)) {
        counterSent();
        order.push('counter read');
      } else if (table.endsWith('-events')) order.push('write');
    };
    try {
      const res = await counted(201, events(3));
      expect(res.body).toEqual({ success: true, added: 3 });
    } finally {
      hold = undefined;
    }
    expect(order).toEqual(['counter read', 'conversation answered', 'write', 'write', 'write']);
  });

  it('a retried batch (all committed) is three reads and nothing written', async () => {
    const retry = await counted(101, events(100));
    expect(retry.body).toEqual({ success: true, added: 0 });
    expect(retry.requests).toEqual([
      'GetItemCommand@conversations',
      'GetItemCommand@events',
      'GetItemCommand@sandboxes',
    ]);
  });

  it('a wrong key costs one read of the sandbox; a foreign conversation its read and the counter read beside it, and nothing is written', async () => {
    const wrong = await counted(204, events(1), 'sbx_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.requests).toEqual(['GetItemCommand@sandboxes']);
    const foreign = await counted(1, events(1), key, randomUUID().replaceAll('-', ''));
    expect(foreign.status).toBe(401);
    expect(foreign.requests).toEqual([
      'GetItemCommand@conversations',
      'GetItemCommand@events',
      'GetItemCommand@sandboxes',
    ]);
  });

  it('a batch beyond a gap flags the counter and checks the gap is open (one key read); the batch that fills it carries the counter over both (one keys-only Query)', async () => {
    const ahead = await counted(214, events(10)); // 204..213 not posted yet
    expect(ahead.body).toEqual({ success: true, added: 0 }); // stored, not committed
    expect(ahead.requests).toEqual([
      'BatchWriteItemCommand@events',
      'GetItemCommand@conversations',
      'GetItemCommand@events',
      'GetItemCommand@events',
      'GetItemCommand@sandboxes',
      'UpdateItemCommand@events',
      'UpdateItemCommand@events',
    ]);
    const filler = await counted(204, events(10));
    expect(filler.body).toEqual({ success: true, added: 10 });
    expect(filler.requests).toEqual([
      'BatchWriteItemCommand@events',
      'GetItemCommand@conversations',
      'GetItemCommand@events',
      'GetItemCommand@events',
      'GetItemCommand@sandboxes',
      'QueryCommand@events',
      'UpdateItemCommand@events',
      'UpdateItemCommand@events',
      'UpdateItemCommand@events',
    ]);
    expect(await new DynamoEventStore().lastSeq({ userId, conversationId })).toBe(223);
  });

  it('records activity with one more write only when the stored activity is older than ACTIVITY_WRITE_MS', async () => {
    const store = new DynamoSandboxStore();
    const rec = (await store.get(sandboxId))!;
    await store.update(sandboxId, rec.version, {
      lastActivityAt: new Date(Date.now() - ACTIVITY_WRITE_MS - 5_000).toISOString(),
    });
    const stale = await counted(224, events(10));
    expect(stale.body).toEqual({ success: true, added: 10 });
    expect(stale.requests.filter((r) => r.endsWith('@sandboxes'))).toEqual([
      'GetItemCommand@sandboxes',
      'UpdateItemCommand@sandboxes',
    ]);
  });
});

describe("the bridge's calls in DynamoDB requests", () => {
  // The wrapper's key check reads the sandbox record and hands it to the operation: none reads it again.
  it('a heartbeat is one read of the sandbox (and one write when the agent was active)', async () => {
    const idle = await countedCall('POST', fillPath('heartbeat', { sandbox_id: sandboxId }), { active: false });
    expect(idle.status).toBe(200);
    expect(idle.requests).toEqual(['GetItemCommand@sandboxes']);
    const active = await countedCall('POST', fillPath('heartbeat', { sandbox_id: sandboxId }), { active: true });
    expect(active.status).toBe(200);
    expect(active.requests).toEqual(['GetItemCommand@sandboxes', 'UpdateItemCommand@sandboxes']);
  });

  it('a command poll without waiting is one read of the sandbox and one Query of its queue; an ack one read and one delete', async () => {
    const poll = await countedCall('GET', `${fillPath('commands', { sandbox_id: sandboxId })}?wait=0`);
    expect(poll.body).toEqual({ commands: [] });
    expect(poll.requests).toEqual(['GetItemCommand@sandboxes', 'QueryCommand@commands']);
    const ack = await countedCall('POST', fillPath('ack', { sandbox_id: sandboxId, seq: 7 }));
    expect(ack.status).toBe(200);
    expect(ack.requests).toEqual(['DeleteItemCommand@commands', 'GetItemCommand@sandboxes']);
  });

  it('a wrong key is one read of the sandbox and a 401, on every bridge call', async () => {
    for (const [method, path, body] of [
      ['POST', fillPath('heartbeat', { sandbox_id: sandboxId }), { active: true }],
      ['GET', `${fillPath('commands', { sandbox_id: sandboxId })}?wait=0`, undefined],
      ['POST', fillPath('ack', { sandbox_id: sandboxId, seq: 1 }), undefined],
    ] as const) {
      const res = await countedCall(method, path, body, 'sbx_wrong');
      expect(res.status).toBe(401);
      expect(res.requests).toEqual(['GetItemCommand@sandboxes']);
    }
  });
});

describe('DynamoEventStore.append', () => {
  it('returns the committed end it left: after a contiguous batch, a batch beyond a gap, the batch that fills it, and a retry', async () => {
    const store = new DynamoEventStore();
    const ref = { userId, conversationId: randomUUID().replaceAll('-', '') };
    const batch = (n: number) => events(n) as AgentEventEnvelope[];
    expect(await store.append(ref, 1, batch(3))).toEqual({ added: 3, lastSeq: 3 });
    // 4..6 missing: stored, not committed, so not counted as added.
    expect(await store.append(ref, 7, batch(2))).toEqual({ added: 0, lastSeq: 3 });
    expect(await store.lastSeq(ref)).toBe(3);
    expect(await store.append(ref, 4, batch(3))).toEqual({ added: 3, lastSeq: 8 }); // fills the gap, carries over 7..8
    expect(await store.lastSeq(ref)).toBe(8);
    expect(await store.append(ref, 1, batch(8))).toEqual({ added: 0, lastSeq: 8 });
  });

  it('a catch-up that read the flag before a batch beyond a gap set it again does not clear it (the batch is carried over when the gap fills)', async () => {
    const store = new DynamoEventStore();
    const ref = { userId, conversationId: randomUUID().replaceAll('-', '') };
    const batch = (n: number) => events(n) as AgentEventEnvelope[];
    await store.append(ref, 1, batch(2));
    // A flag left set (e.g. by a batch since carried over): the next contiguous batch catches up.
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName('events'),
        Key: { conversationKey: `${userId}#${ref.conversationId}`, seq: 0 },
        UpdateExpression: 'SET ahead = :t',
        ExpressionAttributeValues: { ':t': true },
      }),
    );
    // Hold that catch-up's write (it has read the counter and found nothing past it) ...
    let release!: () => void;
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const gate = new Promise<void>((r) => (release = r));
    hold = async (input) => {
      if (!String(input.UpdateExpression).includes('REMOVE ahead')) return;
      hold = undefined;
      held();
      await gate;
    };
    const filler = store.append(ref, 3, batch(2));
    await holding;
    // ... while a batch lands beyond a gap (5..6 missing) and flags the counter again.
    expect(await store.append(ref, 7, batch(2))).toEqual({ added: 0, lastSeq: 4 });
    release();
    expect(await filler).toEqual({ added: 2, lastSeq: 4 });
    // The flag survived: filling the gap carries the counter over 7..8.
    expect(await store.append(ref, 5, batch(2))).toEqual({ added: 2, lastSeq: 8 });
    expect(await store.lastSeq(ref)).toBe(8);
  });

  it('counts a batch posted many times at once as added once: only the post that committed it says so', async () => {
    const store = new DynamoEventStore();
    const ref = { userId, conversationId: randomUUID().replaceAll('-', '') };
    for (const [first, n] of [
      [1, 100],
      [101, 100],
    ] as const) {
      const batch = events(n) as AgentEventEnvelope[];
      const answers = await Promise.all(Array.from({ length: 8 }, () => store.append(ref, first, batch, first - 1)));
      const added = answers.map((a) => a.added);
      expect(added.reduce((x, y) => x + y, 0)).toBe(n);
      expect(added.filter((x) => x > 0)).toEqual([n]);
    }
    // Beyond a gap: racing copies are stored, none committed; the filler counts only its own.
    ref.conversationId = randomUUID().replaceAll('-', '');
    const gapBatch = events(5) as AgentEventEnvelope[];
    const gap = await Promise.all(Array.from({ length: 4 }, () => store.append(ref, 6, gapBatch)));
    expect(gap.map((g) => g.added)).toEqual([0, 0, 0, 0]);
    expect(await store.append(ref, 1, events(5) as AgentEventEnvelope[])).toEqual({ added: 5, lastSeq: 10 });
  });

  it('commits every batch when appenders race, each batch landing in any order', async () => {
    const store = new DynamoEventStore();
    for (let trial = 0; trial < 2; trial++) {
      const ref = { userId, conversationId: randomUUID().replaceAll('-', '') };
      const [clients, size, rounds] = [4, 10, 10];
      await Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          for (let r = 0; r < rounds; r++)
            await store.append(ref, (r * clients + c) * size + 1, events(size) as AgentEventEnvelope[]);
        }),
      );
      expect(await store.lastSeq(ref)).toBe(clients * size * rounds);
    }
  });
});

describe("the agent's own LLM usage reports (a user's own key)", () => {
  // A sandbox of an organization (the reports count toward it) with two conversations, one on another sandbox.
  const orgId = `org_${'a1'.repeat(12)}`;
  const ownSandbox = `sbx-agent-${randomUUID().slice(0, 8)}`;
  const ownKey = `sbx_${randomUUID().replaceAll('-', '')}`;
  const mine = randomUUID().replaceAll('-', '');
  const theirs = randomUUID().replaceAll('-', '');
  let usage: DynamoUsageStore;
  const today = () => new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    usage = new DynamoUsageStore();
    for (const [id, key, cid] of [
      [ownSandbox, ownKey, mine],
      [`${ownSandbox}-x`, `${ownKey}-x`, theirs],
    ] as const) {
      await storedSandbox(userId, { id, key, orgId });
      await storedConversation(userId, { id: cid, sandbox_id: id });
    }
  });

  const metrics = (calls: number, input: number, output: number, cost: number, model = 'openai/gpt-4o') => ({
    kind: 'ConversationStateUpdateEvent',
    id: `e-${++made}`,
    timestamp: new Date().toISOString(),
    source: 'environment',
    key: 'metrics',
    value: {
      model,
      llm_calls: calls,
      prompt_tokens: input,
      completion_tokens: output,
      accumulated_cost: cost,
      max_budget_per_task: null,
      price_source: 'table',
      note: null,
    },
  });
  const post = (firstSeq: number, batch: unknown[], cid = mine) =>
    countedCall(
      'POST',
      `${fillPath('events', { sandbox_id: ownSandbox, conversation_id: cid })}?first_seq=${firstSeq}`,
      batch,
      ownKey,
    );
  const ledger = (requests: string[]) => requests.filter((r) => r.endsWith('@usage'));
  const agentTotals = async () => {
    const [day] = await usage.orgDays(orgId, today(), today());
    return {
      agentCalls: day?.agentCalls,
      agentInputTokens: day?.agentInputTokens,
      agentOutputTokens: day?.agentOutputTokens,
      agentMicroUsd: day?.agentMicroUsd,
      billed: (day?.computeMicroUsd ?? 0) + (day?.llmMicroUsd ?? 0) + (day?.llmCalls ?? 0),
    };
  };

  /** The agent's change of execution status, the event that has the kept report recorded. */
  const status = (value: string) => ({
    kind: 'ConversationStateUpdateEvent',
    id: `e-${++made}`,
    timestamp: new Date().toISOString(),
    source: 'environment',
    key: 'execution_status',
    value,
  });
  /** The sandbox's stored activity made older than ACTIVITY_WRITE_MS (so its next batch records activity). */
  const activityLongAgo = async () => {
    const store = new DynamoSandboxStore();
    const rec = (await store.get(ownSandbox))!;
    await store.update(ownSandbox, rec.version, {
      lastActivityAt: new Date(Date.now() - ACTIVITY_WRITE_MS - 5_000).toISOString(),
    });
  };
  const recorded = ['UpdateItemCommand@usage', 'UpdateItemCommand@usage', 'UpdateItemCommand@usage'];

  it('a report rides on the counter (no request of its own) until a status change or ACTIVITY_WRITE_MS, then three writes; a retry none', async () => {
    const plain = await post(1, events(5));
    expect(plain.body).toEqual({ success: true, added: 5 });
    expect(ledger(plain.requests)).toEqual([]);
    const counterWrites = (requests: string[]) => requests.filter((r) => r === 'UpdateItemCommand@events').length;
    // Cumulative reports, the batch's last one kept: 3 calls, 1,200 + 90 tokens, 0.0123 USD. Activity was
    // recorded a moment ago: the report is kept in the bucket's write to the counter, nothing more.
    const reported = await post(6, [metrics(2, 800, 50, 0.008), ...events(2), metrics(3, 1200, 90, 0.0123)]);
    expect(reported.body).toEqual({ success: true, added: 4 });
    expect(ledger(reported.requests)).toEqual([]);
    expect(counterWrites(reported.requests)).toBe(counterWrites(plain.requests));
    expect((await agentTotals()).agentCalls).toBeUndefined();
    const retried = await post(6, [metrics(2, 800, 50, 0.008), ...events(2), metrics(3, 1200, 90, 0.0123)]);
    expect(retried.body).toEqual({ success: true, added: 0 });
    expect(ledger(retried.requests)).toEqual([]);
    // The agent's status changes (its run ended): the kept report goes into the ledger.
    const finished = await post(10, [status('finished')]);
    expect(ledger(finished.requests)).toEqual(recorded);
    expect(await agentTotals()).toMatchObject({ agentCalls: 3, agentInputTokens: 1200, agentMicroUsd: 12_300 });
    // A report once activity is due again is recorded at once, adding its increase only.
    await activityLongAgo();
    const due = await post(11, [metrics(4, 1500, 100, 0.015)]);
    expect(ledger(due.requests)).toEqual(recorded);
    expect(await agentTotals()).toEqual({
      agentCalls: 4,
      agentInputTokens: 1500,
      agentOutputTokens: 100,
      agentMicroUsd: 15_000,
      billed: 0,
    });
    const [user] = await usage.userDays(orgId, userId, today(), today());
    expect(user).toMatchObject({ agentCalls: 4, agentMicroUsd: 15_000 });
  });

  it('a hostile sandbox: a lower report, a malformed one, a platform model and a foreign conversation add nothing, and nothing billed', async () => {
    const before = await agentTotals();
    // A report lower than the last (a lie, or a restarted count), with a status change to have it recorded:
    // adds nothing; the highest stays the mark.
    const lower = await post(12, [metrics(1, 1, 1, 0.000001), status('running')]);
    expect(ledger(lower.requests)).toEqual(['UpdateItemCommand@usage', 'UpdateItemCommand@usage']);
    // Malformed: negative, fractional, huge, a cost as a string: ignored, nothing written.
    for (const [i, bad] of [
      metrics(-1, 10, 10, 1),
      metrics(1.5, 10, 10, 1),
      metrics(1, 1e16, 10, 1),
      { ...metrics(1, 10, 10, 1), value: { ...metrics(1, 10, 10, 1).value, accumulated_cost: '9' } },
    ].entries()) {
      const res = await post(14 + i * 2, [bad, status('running')]);
      expect(res.body).toEqual({ success: true, added: 2 });
      // Nothing of it. The status change offers the report kept on the counter (an older one than the ledger
      // holds): one conditional write that its number refuses, changing nothing.
      expect(ledger(res.requests)).toEqual(['UpdateItemCommand@usage']);
    }
    // A platform model's calls are the gateway's to count: the agent's report of one is skipped.
    const platform = await post(22, [metrics(99, 1e9, 1e9, 1e6, 'platform/claude-sonnet'), status('running')]);
    expect(ledger(platform.requests)).toEqual(['UpdateItemCommand@usage']);
    // Another sandbox's conversation: 401 before anything is written.
    const foreign = await post(1, [metrics(50, 5e6, 5e6, 5000), status('finished')], theirs);
    expect(foreign.status).toBe(401);
    expect(ledger(foreign.requests)).toEqual([]);
    expect(await agentTotals()).toEqual(before);
    // After the lie an honest report adds only what is over the highest (4 -> 5 calls), never the lie's drop again.
    await post(24, [metrics(5, 1600, 110, 0.016), status('finished')]);
    expect(await agentTotals()).toEqual({
      agentCalls: 5,
      agentInputTokens: 1600,
      agentOutputTokens: 110,
      agentMicroUsd: 16_000,
      billed: 0,
    });
  });
});
