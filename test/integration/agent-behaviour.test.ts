import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUMMARY_PROMPT_START } from '#sandbox/agent/condenser.ts';
import type { AgentEvent, EventOf } from '#sandbox/agent/events.ts';
import { AgentSession } from '#sandbox/agent/session.ts';
import { cleanups, harness, observationText, say } from '#test/helpers/agent-harness.ts';
import { reply, startScriptedLlm, type RecordedRequest, type ScriptedReply } from '#test/helpers/scripted-llm.ts';

/** The agent in real work: each test drives an AgentSession against a scripted OpenAI-compatible server. */

const isSummaryCall = (r: RecordedRequest) =>
  String(r.body?.messages?.[0]?.content ?? '').startsWith(SUMMARY_PROMPT_START);
const agentCalls = (requests: RecordedRequest[]) => requests.filter((r) => !isSummaryCall(r));
const withRisk = (command: string, risk?: string): ScriptedReply =>
  reply.tool('execute_bash', { command, ...(risk ? { security_risk: risk } : {}) });

async function loopbackServer(
  handle: (req: IncomingMessage, body: string) => { status?: number; type?: string; body: string },
) {
  const seen: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    seen.push({ url: req.url ?? '', headers: req.headers, body });
    const r = handle(req, body);
    res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json' }).end(r.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('the persistent shell', () => {
  it('keeps cd and exported variables across execute_bash calls; observations and actions carry what OpenHands clients read', async () => {
    const h = await harness([
      reply.bash('mkdir -p app && cd app && export STAGE=test'),
      reply.bash('echo "stage=$STAGE"; pwd'),
      reply.finish('ok'),
    ]);
    await h.session.sendMessage(say('Set up'));
    expect(h.session.status).toBe('finished');
    const [, second] = h.of('ObservationEvent');
    expect(second!.observation).toMatchObject({
      kind: 'ExecuteBashObservation',
      command: 'echo "stage=$STAGE"; pwd',
      output: `stage=test\n${join(h.workspaceDir, 'app')}`,
      exit_code: 0,
      error: false,
      timeout: false,
      metadata: { exit_code: 0, working_dir: join(h.workspaceDir, 'app') },
    });
    const action = h.of('ActionEvent')[1]!;
    expect(action).toMatchObject({
      action: {
        kind: 'ExecuteBashAction',
        command: 'echo "stage=$STAGE"; pwd',
        is_input: false,
        timeout: null,
        reset: false,
      },
      tool_call: { id: action.tool_call_id, type: 'function', function: { name: 'execute_bash' } },
      security_risk: 'UNKNOWN',
    });
    expect(JSON.parse(action.tool_call!.function.arguments)).toEqual({ command: 'echo "stage=$STAGE"; pwd' });
    const prompt = h.of('SystemPromptEvent')[0]!;
    expect(prompt.tools.find((t) => t.name === 'execute_bash')).toMatchObject({
      type: 'function',
      function: { name: 'execute_bash', parameters: { type: 'object' } },
    });
  });

  it('file edits carry what the OpenHands UI shows: output, path, prev_exist, old and new content', async () => {
    const h = await harness([
      reply.tool('str_replace_editor', { command: 'create', path: 'a.txt', file_text: 'one\n' }),
      reply.tool('str_replace_editor', { command: 'str_replace', path: 'a.txt', old_str: 'one', new_str: 'two' }),
      reply.tool('str_replace_editor', { command: 'str_replace', path: 'a.txt', old_str: 'absent', new_str: 'x' }),
      reply.finish('ok'),
    ]);
    await h.session.sendMessage(say('Edit'));
    const [created, replaced, failed] = h.of('ObservationEvent').map((e) => e.observation);
    const path = join(h.workspaceDir, 'a.txt');
    expect(created).toMatchObject({
      kind: 'StrReplaceEditorObservation',
      command: 'create',
      path,
      prev_exist: false,
      old_content: null,
      new_content: 'one\n',
      error: null,
      is_error: false,
    });
    expect(created!.output).toContain('File created');
    expect(replaced).toMatchObject({
      command: 'str_replace',
      prev_exist: true,
      old_content: 'one\n',
      new_content: 'two\n',
      error: null,
    });
    expect(failed).toMatchObject({ is_error: true, error: expect.stringContaining('did not appear verbatim') });
    expect(h.of('ActionEvent')[1]!.action).toMatchObject({
      kind: 'StrReplaceEditorAction',
      command: 'str_replace',
      path: 'a.txt',
      old_str: 'one',
      new_str: 'two',
      file_text: null,
      insert_line: null,
      view_range: null,
    });
  });

  it('a command that outlives the soft time-out returns -1 with a note; the model waits, then interrupts it with C-c', async () => {
    const h = await harness(
      [
        reply.bash('echo begun; sleep 1; echo later; sleep 60; echo never'),
        reply.bash('ls'),
        reply.tool('execute_bash', { command: '', timeout: 3 }),
        reply.tool('execute_bash', { command: 'C-c', is_input: true }),
        reply.finish('stopped it'),
      ],
      { noChangeTimeoutMs: 500 },
    );
    await h.session.sendMessage(say('Run the slow thing'));
    expect(h.session.status).toBe('finished');
    const [soft, refused, waited, interrupted] = h.of('ObservationEvent').map((e) => e.observation);
    expect(soft).toMatchObject({ exit_code: -1, timeout: true, output: 'begun' });
    expect(refused).toMatchObject({ exit_code: -1, error: true });
    expect(waited).toMatchObject({ exit_code: -1, timeout: true, output: 'later' });
    expect(interrupted).toMatchObject({ exit_code: 130, timeout: false });
    const toolResults = agentCalls(h.llm.requests).map((r) => r.body.messages.at(-1).content);
    expect(toolResults[1]).toMatch(/no new output after 0.5 s/);
    expect(toolResults[2]).toMatch(/NOT executed.*still running/s);
  });

  it('after a pause and resume (a new process) the shell is new, and the next observation says so', async () => {
    const llm = await startScriptedLlm([
      reply.bash('cd /tmp && export GONE=1'),
      reply.finish('ok'),
      reply.bash('echo "[$GONE]"; pwd'),
      reply.finish('ok'),
    ]);
    const workspaceDir = mkdtempSync(join(tmpdir(), 'agent-ws-'));
    const stateFile = join(mkdtempSync(join(tmpdir(), 'agent-state-')), 'state.json');
    cleanups.push(async () => {
      await llm.close();
      rmSync(workspaceDir, { recursive: true, force: true });
    });
    const make = (events: AgentEvent[]) =>
      new AgentSession({
        conversationId: 'r',
        workspaceDir,
        stateFile,
        llm: { model: 'm', apiKey: null, baseUrl: llm.baseUrl, maxRetries: 0 },
        emit: async (e) => void events.push(...e),
      });
    const first = make([]);
    await first.start();
    await first.sendMessage(say('first'));
    await first.close();
    const events: AgentEvent[] = [];
    const second = make(events);
    cleanups.push(() => second.close());
    await second.start();
    await second.sendMessage(say('second'));
    const obs = events.find((e): e is EventOf<'ObservationEvent'> => e.kind === 'ObservationEvent')!;
    expect(obs.observation).toMatchObject({
      output: `[]\n${workspaceDir}`,
      metadata: { prefix: expect.stringMatching(/paused and resumed/) },
    });
    expect(observationText(obs)).toMatch(/new shell session/);
  });
});

describe('the condenser', () => {
  it('keeps the prompt bounded over 60 steps with a small condenser_max_size: a summarizing call, its summary in the next prompt', async () => {
    let summaries = 0;
    let step = 0;
    const script = (r: RecordedRequest): ScriptedReply => {
      if (isSummaryCall(r)) return { text: `SUMMARY-${++summaries}: steps so far echoed their numbers` };
      step += 1;
      return step <= 60 ? reply.bash(`echo step-${step}`) : reply.finish('all steps done');
    };
    const h = await harness(
      Array.from({ length: 80 }, () => script),
      { condenser: { enabled: true, maxSize: 20 } },
    );
    await h.session.sendMessage(say('Echo sixty steps'));
    expect(h.session.status).toBe('finished');
    expect(step).toBe(61);

    const calls = agentCalls(h.llm.requests);
    const largest = Math.max(...calls.map((r) => r.body.messages.length));
    expect(largest).toBeLessThanOrEqual(20 + 2); // system prompt and the new message on top of the bounded history
    expect(summaries).toBeGreaterThanOrEqual(4);
    // After each summarizing call, the next prompt carries that summary (the middle was not just dropped).
    let k = 0;
    h.llm.requests.forEach((r, i) => {
      if (!isSummaryCall(r)) return;
      k += 1;
      expect(JSON.stringify(h.llm.requests[i + 1]!.body.messages)).toContain(`SUMMARY-${k}:`);
    });
    // The user's request stays in every prompt (the kept head); the summarizer saw the earlier summary.
    for (const r of calls) expect(JSON.stringify(r.body.messages)).toContain('Echo sixty steps');
    const secondSummaryCall = h.llm.requests.filter(isSummaryCall)[1]!;
    expect(JSON.stringify(secondSummaryCall.body.messages)).toContain('SUMMARY-1');
    const condensations = h.of('CondensationEvent');
    expect(condensations).toHaveLength(summaries);
    expect(condensations[0]).toMatchObject({
      source: 'environment',
      summary: expect.stringContaining('SUMMARY-1'),
      summary_offset: expect.any(Number),
    });
    const ids = new Set(h.events.map((e) => e.id));
    expect(condensations[0]!.forgotten_event_ids.length).toBeGreaterThan(0);
    for (const id of condensations[0]!.forgotten_event_ids) expect(ids.has(id)).toBe(true);
  });

  it('recovers from a context-length error: condenses, retries, and goes on', async () => {
    const tooLong = {
      error: {
        status: 400,
        message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      },
    };
    let overflowed = false;
    const script = (r: RecordedRequest): ScriptedReply => {
      if (isSummaryCall(r)) return { text: 'SUMMARY-CTX: five echoes ran' };
      const n = agentCalls(h.llm.requests).length;
      if (n <= 5) return reply.bash(`echo ${n}`);
      if (!overflowed) {
        overflowed = true;
        return tooLong;
      }
      return reply.finish('done despite the overflow');
    };
    const h = await harness(
      Array.from({ length: 12 }, () => script),
      { condenser: { enabled: false } },
    );
    await h.session.sendMessage(say('Echo a few'));
    expect(h.session.status).toBe('finished');
    expect(h.of('CondensationEvent')).toHaveLength(1);
    const last = h.llm.requests.at(-1)!.body.messages;
    expect(JSON.stringify(last)).toContain('SUMMARY-CTX');
    expect(last.length).toBeLessThan(h.llm.requests.at(-3)!.body.messages.length);
  });

  it('a context-length error that condensing cannot cure ends in error with a clear AgentErrorEvent', async () => {
    const h = await harness([{ error: { status: 400, message: 'context_length_exceeded: prompt is too long' } }]);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('error');
    expect(h.of('AgentErrorEvent').at(-1)!.error).toMatch(/too long for the model's context window/);
  });
});

describe('the LLM security analyzer in confirmation mode', () => {
  it('runs LOW actions at once and waits for HIGH and UNKNOWN ones; events carry the risk', async () => {
    const h = await harness(
      [
        withRisk('echo low > low.txt', 'LOW'),
        withRisk('echo high > high.txt', 'HIGH'),
        withRisk('echo unknown > unknown.txt'),
        reply.finish('done'),
      ],
      { confirmationMode: true, securityAnalyzer: 'llm' },
    );
    await h.session.sendMessage(say('Write three files'));
    expect(existsSync(join(h.workspaceDir, 'low.txt'))).toBe(true);
    expect(h.session.status).toBe('waiting_for_confirmation');
    expect(existsSync(join(h.workspaceDir, 'high.txt'))).toBe(false);
    await h.session.respondToConfirmation({ accept: true });
    expect(existsSync(join(h.workspaceDir, 'high.txt'))).toBe(true);
    expect(h.session.status).toBe('waiting_for_confirmation');
    await h.session.respondToConfirmation({ accept: false, reason: 'no unrated actions' });
    expect(existsSync(join(h.workspaceDir, 'unknown.txt'))).toBe(false);
    expect(h.session.status).toBe('finished');
    expect(h.of('ActionEvent').map((e) => e.security_risk)).toEqual(['LOW', 'HIGH', 'UNKNOWN', 'UNKNOWN']);
    expect(h.statuses()).toEqual([
      'idle',
      'running',
      'waiting_for_confirmation',
      'running',
      'waiting_for_confirmation',
      'running',
      'finished',
    ]);
    // The model was asked for the rating, and the tools' own arguments do not carry it.
    const first = h.llm.requests[0]!.body;
    expect(first.messages[0].content).toContain('security_risk');
    expect(first.tools.find((t: any) => t.function.name === 'execute_bash').function.parameters.required).toContain(
      'security_risk',
    );
    expect(
      first.tools.find((t: any) => t.function.name === 'finish').function.parameters.properties,
    ).not.toHaveProperty('security_risk');
    expect(h.of('ActionEvent')[0]!.action).not.toHaveProperty('security_risk');
  });
});

describe('web search and fetch', () => {
  it('searches through a Tavily-compatible API and fetches a page as text, with the key masked in events', async () => {
    const tavily = await loopbackServer((req, body) => {
      if (req.url !== '/search' || req.headers.authorization !== 'Bearer tvly-test-key-9')
        return { status: 401, body: '{"detail":"bad key"}' };
      const q = JSON.parse(body) as { query: string };
      return {
        body: JSON.stringify({
          query: q.query,
          answer: 'Use vitest.',
          results: [{ title: 'Vitest docs', url: 'https://vitest.dev', content: 'A fast test runner.' }],
        }),
      };
    });
    const pages = await loopbackServer(() => ({
      type: 'text/html; charset=utf-8',
      body: '<html><head><style>p{}</style><script>var x = 1;</script></head><body><h1>Guide &amp; notes</h1><p>First paragraph.</p><ul><li>one</li><li>two</li></ul></body></html>',
    }));
    const h = await harness(
      [
        reply.tool('web_search', { query: 'typescript test runner' }),
        reply.tool('fetch', { url: `${pages.url}/guide` }),
        reply.finish('found it'),
      ],
      {
        search: { apiKey: 'tvly-test-key-9', baseUrl: tavily.url },
      },
    );
    expect(h.llm.requests).toHaveLength(0);
    await h.session.sendMessage(say('Find a test runner'));
    expect(h.session.status).toBe('finished');
    expect(JSON.parse(tavily.seen[0]!.body)).toMatchObject({ query: 'typescript test runner' });
    const [search, page] = h.of('ObservationEvent');
    expect(search!.observation).toMatchObject({ kind: 'WebSearchObservation', is_error: false });
    expect(observationText(search!)).toContain('Vitest docs');
    expect(observationText(search!)).toContain('https://vitest.dev');
    const text = observationText(page!);
    expect(text).toContain('Guide & notes');
    expect(text).toContain('First paragraph.');
    expect(text).toContain('- one');
    expect(text).not.toContain('var x');
    expect(text).not.toContain('<p>');
    expect(JSON.stringify(h.events)).not.toContain('tvly-test-key-9');
  });

  it('without a search key there are no web tools', async () => {
    const h = await harness([reply.finish('ok')]);
    await h.session.sendMessage(say('hi'));
    expect(h.llm.requests[0]!.body.tools.map((t: any) => t.function.name)).not.toContain('web_search');
  });
});

describe('the planning agent', () => {
  it('has no shell, refuses edits outside PLAN.md, and writes the plan', async () => {
    const h = await harness(
      [
        reply.bash('rm -rf /'),
        reply.tool('str_replace_editor', { command: 'create', path: 'src/main.ts', file_text: 'hacked' }),
        reply.tool('str_replace_editor', {
          command: 'create',
          path: 'PLAN.md',
          file_text: '# Plan\n1. Add a README\n',
        }),
        reply.finish('The plan is in PLAN.md'),
      ],
      { agent: 'PlanningAgent' },
    );
    await h.session.sendMessage(say('Plan a README'));
    expect(h.session.status).toBe('finished');
    expect(h.llm.requests[0]!.body.tools.map((t: any) => t.function.name).sort()).toEqual([
      'finish',
      'str_replace_editor',
      'think',
    ]);
    expect(h.of('AgentErrorEvent')[0]!.error).toMatch(/Tool "execute_bash" does not exist/);
    const [refused] = h.of('ObservationEvent');
    expect(refused!.observation).toMatchObject({
      is_error: true,
      error: expect.stringContaining('Only PLAN.md can be changed'),
    });
    expect(existsSync(join(h.workspaceDir, 'src/main.ts'))).toBe(false);
    expect(readFileSync(join(h.workspaceDir, 'PLAN.md'), 'utf8')).toContain('Add a README');
    expect(h.llm.requests[0]!.body.messages[0].content).toMatch(/planning, not implementing/);
  });
});

describe('LLM resilience', () => {
  it('retries a 429 twice (honouring retry-after-ms), then succeeds; each retry is an event', async () => {
    const slow = { 'retry-after-ms': '30' };
    const h = await harness(
      [reply.error(429, 'slow down', slow), reply.error(429, 'slow down', slow), reply.finish('made it')],
      { llmOptions: { maxRetries: 3 } },
    );
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('finished');
    const retries = h.of('ConversationStateUpdateEvent').filter((e) => e.key === 'llm_retry');
    expect(retries.map((e) => (e.value as { attempt: number; delay_ms: number }).delay_ms)).toEqual([30, 30]);
    expect(retries[0]!.value).toMatchObject({ attempt: 1, reason: expect.stringContaining('HTTP 429') });
  });

  it('retries a call that timed out, with back-off', async () => {
    const h = await harness([{ hang: true }, reply.finish('second try')], {
      llmOptions: { maxRetries: 2, timeoutMs: 300, baseDelayMs: 10 },
    });
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('finished');
    expect(h.of('ConversationStateUpdateEvent').filter((e) => e.key === 'llm_retry')).toHaveLength(1);
  });

  it('gives malformed tool-call arguments back to the model, which corrects itself on the next step', async () => {
    const h = await harness([
      { toolCalls: [{ name: 'execute_bash', args: '{"command": "echo hi"' }] },
      reply.bash('echo corrected'),
      reply.finish('ok'),
    ]);
    await h.session.sendMessage(say('go'));
    expect(h.session.status).toBe('finished');
    expect(h.of('AgentErrorEvent')[0]).toMatchObject({
      tool_name: 'execute_bash',
      error: expect.stringContaining('Invalid arguments'),
    });
    const told = h.llm.requests[1]!.body.messages.at(-1);
    expect(told).toMatchObject({ role: 'tool' });
    expect(told.content).toContain('Invalid arguments for tool execute_bash');
    expect(observationText(h.of('ObservationEvent')[0]!)).toContain('corrected');
  });
});

describe('language', () => {
  it('asks the model to write to the user in the language of the settings', async () => {
    const h = await harness([reply.finish('ok')], { language: 'ja' });
    await h.session.sendMessage(say('hi'));
    expect(h.llm.requests[0]!.body.messages[0].content).toContain('Write every message to the user in Japanese (ja)');
  });
});
