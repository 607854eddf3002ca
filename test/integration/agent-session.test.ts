import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AgentEvent, EventOf } from '#sandbox/agent/events.ts';
import { AgentSession, AgentStateError } from '#sandbox/agent/session.ts';
import { cleanups, harness, observationText, say, type Harness } from '#test/helpers/agent-harness.ts';
import { waitUntil } from '#test/helpers/wait.ts';
import { reply, startScriptedLlm } from '#test/helpers/scripted-llm.ts';

describe('AgentSession against a scripted LLM', () => {
  it('runs a shell command, writes a file and finishes, with events in order', async () => {
    const h = await harness(
      [
        reply.tool('execute_bash', { command: 'echo hello from bash && pwd' }, 'Let me look around.'),
        reply.tool('str_replace_editor', { command: 'create', path: 'notes/hello.txt', file_text: 'hello\nworld\n' }),
        reply.finish('Wrote notes/hello.txt'),
      ],
      { instructions: 'Always answer in English.' },
    );
    await h.session.sendMessage(say('Write a hello file'));

    expect(h.session.status).toBe('finished');
    expect(h.kinds()).toEqual([
      'SystemPromptEvent',
      'status:idle',
      'MessageEvent',
      'status:running',
      'ActionEvent',
      'ObservationEvent',
      'ActionEvent',
      'ObservationEvent',
      'ActionEvent',
      'ObservationEvent',
      'status:finished',
    ]);
    expect(readFileSync(join(h.workspaceDir, 'notes/hello.txt'), 'utf8')).toBe('hello\nworld\n');

    const [bash, create, finish] = h.of('ActionEvent');
    expect(bash).toMatchObject({
      source: 'agent',
      tool_name: 'execute_bash',
      action: { kind: 'ExecuteBashAction', command: 'echo hello from bash && pwd' },
      thought: [{ type: 'text', text: 'Let me look around.' }],
    });
    expect(create!.action).toMatchObject({ kind: 'StrReplaceEditorAction', command: 'create' });
    expect(finish!.action).toEqual({ kind: 'FinishAction', message: 'Wrote notes/hello.txt' });
    const [obs] = h.of('ObservationEvent');
    expect(obs).toMatchObject({
      source: 'environment',
      action_id: bash!.id,
      tool_call_id: bash!.tool_call_id,
      observation: { kind: 'ExecuteBashObservation', exit_code: 0 },
    });
    expect(observationText(obs!)).toContain('hello from bash');
    expect(observationText(obs!)).toContain(h.workspaceDir);

    // Ids unique, timestamps strictly increasing (they order the events).
    expect(new Set(h.events.map((e) => e.id)).size).toBe(h.events.length);
    const ts = h.events.map((e) => e.timestamp);
    expect([...ts].sort()).toEqual(ts);
    expect(new Set(ts).size).toBe(ts.length);

    // What the model saw: the instructions in the system prompt, then the command's output as a tool result.
    expect(h.llm.requests).toHaveLength(3);
    const first = h.llm.requests[0]!.body;
    expect(first.messages[0]).toMatchObject({ role: 'system' });
    expect(first.messages[0].content).toContain('Always answer in English.');
    expect(first.tools.map((t: any) => t.function.name).sort()).toEqual([
      'execute_bash',
      'finish',
      'str_replace_editor',
      'think',
    ]);
    const second = h.llm.requests[1]!.body.messages;
    expect(second.at(-1)).toMatchObject({ role: 'tool', tool_call_id: bash!.tool_call_id });
    expect(second.at(-1).content).toContain('hello from bash');

    expect(h.session.metrics).toMatchObject({ llm_calls: 3, prompt_tokens: 300, completion_tokens: 60 });
  });

  it('ends with a message when the model answers in text only', async () => {
    const h = await harness([reply.text('Nothing to do: the repository is already clean.')]);
    await h.session.sendMessage(say('Clean up'));
    expect(h.session.status).toBe('finished');
    const messages = h.of('MessageEvent');
    expect(messages.at(-1)).toMatchObject({
      source: 'agent',
      llm_message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'Nothing to do: the repository is already clean.' }],
      },
    });
  });

  it('gives commands the custom secrets and the git identity, and masks the secrets in every event and in what the model reads', async () => {
    const secret = 'tok-12345-very-secret';
    const h = await harness(
      [
        reply.bash('echo "token=$MY_TOKEN"; test "$MY_TOKEN" = tok-12345-very-secret && echo token-matches'),
        reply.bash('git init -q . && git commit -q --allow-empty -m first && git log -1 --format="%an <%ae>"'),
        reply.finish(`done with ${secret}`),
      ],
      { secrets: { MY_TOKEN: secret }, gitIdentity: { name: 'Ada Agent', email: 'ada@example.com' } },
    );
    await h.session.sendMessage(say('Use the token'));
    expect(h.session.status).toBe('finished');

    const [first, second] = h.of('ObservationEvent');
    expect(observationText(first!)).toContain('token-matches');
    expect(observationText(first!)).toContain('token=<secret hidden>');
    expect(observationText(second!)).toContain('Ada Agent <ada@example.com>');
    expect(JSON.stringify(h.events)).not.toContain(secret);
    expect(h.of('ActionEvent').at(-1)!.action).toEqual({ kind: 'FinishAction', message: 'done with <secret hidden>' });
    // Tool results are masked before the model reads them (the model's own words are its own).
    const toolResults = h.llm.requests.flatMap((r) => r.body.messages.filter((m: any) => m.role === 'tool'));
    expect(JSON.stringify(toolResults)).toContain('token=<secret hidden>');
    expect(JSON.stringify(toolResults)).not.toContain(secret);
    // The model knows the secret by name.
    expect(h.llm.requests[0]!.body.messages[0].content).toContain('MY_TOKEN');
  });

  it('does not give commands the environment of the sandbox program', async () => {
    process.env.ACS_TEST_PROGRAM_KEY = 'program-only-value';
    cleanups.push(() => {
      delete process.env.ACS_TEST_PROGRAM_KEY;
    });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash parameter expansion, run by the agent's shell
    const h = await harness([reply.bash('echo "key=[$ACS_TEST_PROGRAM_KEY] path=[${PATH:+set}]"'), reply.finish('ok')]);
    await h.session.sendMessage(say('env'));
    expect(observationText(h.of('ObservationEvent')[0]!)).toContain('key=[] path=[set]');
  });

  it('in confirmation mode waits before each action; accept runs it', async () => {
    const h = await harness([reply.bash('echo accepted > accepted.txt'), reply.finish('done')], {
      confirmationMode: true,
    });
    await h.session.sendMessage(say('Write a file'));
    expect(h.session.status).toBe('waiting_for_confirmation');
    expect(existsSync(join(h.workspaceDir, 'accepted.txt'))).toBe(false);
    expect(h.of('ActionEvent')).toHaveLength(1);
    expect(h.of('ObservationEvent')).toHaveLength(0);

    await h.session.respondToConfirmation({ accept: true });
    expect(readFileSync(join(h.workspaceDir, 'accepted.txt'), 'utf8')).toBe('accepted\n');
    // finish needs no confirmation
    expect(h.session.status).toBe('finished');
    expect(h.statuses()).toEqual(['idle', 'running', 'waiting_for_confirmation', 'running', 'finished']);
  });

  it('in confirmation mode a rejection becomes a UserRejectObservation and the model is told', async () => {
    const h = await harness([reply.bash('rm -rf important'), reply.finish('I will leave it')], {
      confirmationMode: true,
    });
    writeFileSync(join(h.workspaceDir, 'important'), 'keep me');
    await h.session.sendMessage(say('Tidy up'));
    expect(h.session.status).toBe('waiting_for_confirmation');
    expect(() => h.session.run()).not.toThrow();

    await h.session.respondToConfirmation({ accept: false, reason: 'Do not delete that file' });
    expect(existsSync(join(h.workspaceDir, 'important'))).toBe(true);
    const [rejected] = h.of('UserRejectObservation');
    const [action] = h.of('ActionEvent');
    expect(rejected).toMatchObject({
      source: 'user',
      action_id: action!.id,
      tool_call_id: action!.tool_call_id,
      rejection_reason: 'Do not delete that file',
    });
    const toolMessage = h.llm.requests[1]!.body.messages.at(-1);
    expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: action!.tool_call_id });
    expect(toolMessage.content).toContain('Do not delete that file');
    expect(h.session.status).toBe('finished');
    expect(() => h.session.respondToConfirmation({ accept: true })).toThrow(AgentStateError);
  });

  it('answers every tool call of a step, invalid ones included, when the actions are rejected', async () => {
    const h = await harness(
      [
        {
          toolCalls: [
            { name: 'execute_bash', args: { command: 'echo a' } },
            { name: 'no_such_tool', args: {} },
          ],
        },
        reply.finish('ok'),
      ],
      { confirmationMode: true },
    );
    await h.session.sendMessage(say('two calls'));
    expect(h.session.status).toBe('waiting_for_confirmation');
    await h.session.respondToConfirmation({ accept: false });
    const ids = h.llm.requests[1]!.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.tool_call_id);
    const asked = h.llm.requests[1]!.body.messages.find((m: any) => m.role === 'assistant').tool_calls.map(
      (c: any) => c.id,
    );
    expect(ids.sort()).toEqual(asked.sort());
    expect(h.of('UserRejectObservation')[0]!.rejection_reason).toBe('The user rejected this action.');
  });

  it('a message sent while the agent works joins the conversation before the next model call', async () => {
    const h = await harness([reply.bash('sleep 0.3; echo slept'), reply.finish('ok')]);
    const running = h.session.sendMessage(say('start'));
    await waitUntil('the command to start', () => h.of('ActionEvent').length === 1);
    await h.session.sendMessage(say('Also, be brief.', false));
    await running;
    const messages = h.llm.requests[1]!.body.messages;
    expect(messages.at(-2).role).toBe('tool');
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'Also, be brief.' });
  });

  it('stops at max_iterations with a ConversationErrorEvent naming the limit', async () => {
    const h = await harness([reply.bash('echo 1'), reply.bash('echo 2'), reply.finish('done')], { maxIterations: 2 });
    await h.session.sendMessage(say('Count'));
    expect(h.session.status).toBe('error');
    expect(h.llm.requests).toHaveLength(2);
    const [err] = h.of('ConversationErrorEvent');
    expect(err!.code).toBe('MaxIterationsReached');
    expect(err!.detail).toContain('max_iterations = 2');
    // A new message starts a new task with a fresh count.
    await h.session.sendMessage(say('Go on'));
    expect(h.llm.requests).toHaveLength(3);
    expect(h.session.status).toBe('finished');
  });

  it('returns the metrics with price source and cost, and stops at the budget', async () => {
    const llm = await startScriptedLlm([reply.bash('echo 1'), reply.bash('echo 2'), reply.bash('echo 3')]);
    cleanups.push(() => llm.close());
    const h = await harness([], {
      maxBudgetPerTask: 0.5,
      llm: {
        model: 'scripted-model',
        apiKey: null,
        baseUrl: llm.baseUrl,
        maxRetries: 0,
        pricing: { input: 2000, output: 5000 },
      },
    });
    await h.session.sendMessage(say('Spend'));
    expect(h.session.status).toBe('error');
    expect(llm.requests).toHaveLength(2); // $0.30, then $0.60 >= $0.50: no third call
    const [err] = h.of('ConversationErrorEvent');
    expect(err!.code).toBe('MaxBudgetReached');
    expect(err!.detail).toContain('max_budget_per_task = $0.5');
    expect(h.session.metrics).toMatchObject({
      accumulated_cost: expect.closeTo(0.6, 6),
      prompt_tokens: 200,
      completion_tokens: 40,
      price_source: 'config',
      max_budget_per_task: 0.5,
    });
    const lastMetrics = h
      .of('ConversationStateUpdateEvent')
      .filter((e) => e.key === 'metrics')
      .at(-1);
    expect(lastMetrics!.value).toMatchObject({ accumulated_cost: expect.closeTo(0.6, 6) });
  });

  it('counts an unknown model as costing 0 and says so in the metrics', async () => {
    const h = await harness([reply.finish('ok')]);
    await h.session.sendMessage(say('hi'));
    expect(h.session.metrics).toMatchObject({
      accumulated_cost: 0,
      price_source: 'unknown',
      note: expect.stringContaining('No price is known for scripted-model'),
    });
  });

  it('detects an agent stuck repeating the same action with the same result', async () => {
    const h = await harness(
      Array.from({ length: 6 }, () => reply.bash('echo same')),
      { stuckThreshold: 4 },
    );
    await h.session.sendMessage(say('Loop'));
    expect(h.session.status).toBe('stuck');
    expect(h.llm.requests).toHaveLength(4);
    expect(h.of('ConversationErrorEvent')[0]!.code).toBe('AgentStuckInLoop');
  });

  it('pauses during an LLM call and continues from the same history on run', async () => {
    const h = await harness([reply.bash('echo step-one'), { hang: true }, reply.finish('finished after resume')]);
    const running = h.session.sendMessage(say('Work'));
    await waitUntil('the second model call', () => h.llm.requests.length === 2);
    await h.session.pause();
    await running;
    expect(h.session.status).toBe('paused');
    expect(h.of('PauseEvent')).toHaveLength(1);
    expect(h.of('ObservationEvent')).toHaveLength(1);

    await h.session.run();
    expect(h.session.status).toBe('finished');
    expect(h.llm.requests).toHaveLength(3);
    // The call abandoned by the pause is made again with the same history: the command's result included.
    expect(JSON.stringify(h.llm.requests[2]!.body.messages)).toContain('step-one');
    expect(h.llm.requests[2]!.body.messages).toEqual(h.llm.requests[1]!.body.messages);
    expect(h.statuses()).toEqual(['idle', 'running', 'paused', 'running', 'finished']);
  });

  it('is paused as soon as a pause is accepted while a command runs; the command ends and its result is kept', async () => {
    const h = await harness([reply.bash('sleep 1; echo slept-through'), reply.finish('done after resume')]);
    const running = h.session.sendMessage(say('Work'));
    await waitUntil('the command to start', () => h.of('ActionEvent').length === 1);
    const pausing = h.session.pause();
    // The status says paused while the command still runs (no observation yet).
    await waitUntil('the paused status', () => h.session.status === 'paused');
    expect(h.of('ObservationEvent')).toHaveLength(0);
    await pausing;
    await running;
    expect(observationText(h.of('ObservationEvent')[0]!)).toContain('slept-through');
    expect(h.llm.requests).toHaveLength(1);
    expect(h.statuses()).toEqual(['idle', 'running', 'paused']);
    await h.session.run();
    expect(h.session.status).toBe('finished');
    expect(JSON.stringify(h.llm.requests[1]!.body.messages)).toContain('slept-through');
  });

  it('a run asked for while a pause winds down its command runs after it, not never', async () => {
    const h = await harness([reply.bash('sleep 0.5; echo first'), reply.finish('resumed and done')]);
    const running = h.session.sendMessage(say('Work'));
    await waitUntil('the command to start', () => h.of('ActionEvent').length === 1);
    const pausing = h.session.pause();
    await waitUntil('the paused status', () => h.session.status === 'paused');
    const resumed = h.session.run();
    await Promise.all([pausing, running, resumed]);
    expect(h.session.status).toBe('finished');
    expect(h.statuses()).toEqual(['idle', 'running', 'paused', 'running', 'finished']);
  });

  it('pauses an idle conversation and runs it later', async () => {
    const h = await harness([reply.finish('ok')]);
    await h.session.pause();
    expect(h.session.status).toBe('paused');
    await h.session.sendMessage(say('now', false));
    expect(h.llm.requests).toHaveLength(0);
    await h.session.run();
    expect(h.session.status).toBe('finished');
  });

  it('sends image content to the model', async () => {
    const h = await harness([reply.finish('I see a cat')]);
    await h.session.sendMessage({
      content: [
        { type: 'text', text: 'What is in these pictures?' },
        { type: 'image', image_urls: ['http://127.0.0.1:9/cat.png', 'data:image/png;base64,iVBORw0KGgo='] },
      ],
      run: true,
    });
    const user = h.llm.requests[0]!.body.messages[1];
    expect(user.role).toBe('user');
    expect(user.content).toEqual([
      { type: 'text', text: 'What is in these pictures?' },
      { type: 'image_url', image_url: { url: 'http://127.0.0.1:9/cat.png' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ]);
    expect(h.of('MessageEvent')[0]!.llm_message.content[1]).toEqual({
      type: 'image',
      image_urls: ['http://127.0.0.1:9/cat.png', 'data:image/png;base64,iVBORw0KGgo='],
    });
    await expect(h.session.sendMessage({ content: [{ type: 'image', image_urls: ['not a url'] }] })).rejects.toThrow(
      /image_urls/,
    );
  });

  it('tells the model about a tool that does not exist or bad arguments, as AgentErrorEvents, and goes on', async () => {
    const h = await harness([
      reply.tool('launch_rocket', { when: 'now' }),
      reply.tool('str_replace_editor', { command: 'explode', path: 'x' }),
      reply.finish('ok'),
    ]);
    await h.session.sendMessage(say('go'));
    expect(h.session.status).toBe('finished');
    const errors = h.of('AgentErrorEvent');
    expect(errors.map((e) => e.tool_name)).toEqual(['launch_rocket', 'str_replace_editor']);
    expect(errors[0]!.error).toContain('does not exist');
    expect(errors[1]!.error).toContain('Invalid arguments');
    expect(JSON.stringify(h.llm.requests[1]!.body.messages.at(-1))).toContain('does not exist');
  });
});

describe('AgentSession with repository microagents', () => {
  it('puts always-on microagents in the system prompt and triggered ones with the message that triggers them', async () => {
    const llm = await startScriptedLlm([reply.finish('ok'), reply.finish('ok')]);
    const workspaceDir = mkdtempSync(join(tmpdir(), 'agent-ws-'));
    const md = join(workspaceDir, '.openhands/microagents');
    mkdirSync(md, { recursive: true });
    writeFileSync(join(md, 'repo.md'), 'This repository uses pnpm.');
    writeFileSync(
      join(md, 'db.md'),
      '---\nname: database\ntriggers: [postgres]\n---\nThe test database listens on port 5433.',
    );
    const events: AgentEvent[] = [];
    const session = new AgentSession({
      conversationId: 'm',
      workspaceDir,
      llm: { model: 'm', apiKey: null, baseUrl: llm.baseUrl, maxRetries: 0 },
      emit: async (e) => void events.push(...e),
    });
    cleanups.push(async () => {
      await session.close();
      await llm.close();
      rmSync(workspaceDir, { recursive: true, force: true });
    });
    await session.start();
    await session.sendMessage(say('Say hi'));
    await session.sendMessage(say('Why does Postgres fail?'));
    const [first, second] = llm.requests.map((r) => r.body.messages);
    expect(first[0].content).toContain('This repository uses pnpm.');
    expect(JSON.stringify(first)).not.toContain('5433');
    expect(JSON.stringify(second.at(-1))).toContain('The test database listens on port 5433.');
    const messages = events.filter(
      (e): e is EventOf<'MessageEvent'> => e.kind === 'MessageEvent' && e.source === 'user',
    );
    expect(messages.map((m) => m.activated_microagents)).toEqual([undefined, ['database']]);
    // The event shows what the user wrote, not the added context.
    expect(JSON.stringify(messages[1])).not.toContain('5433');
  });
});

describe('AgentSession when the LLM fails', () => {
  const expectError = (h: Harness, pattern: RegExp) => {
    expect(h.session.status).toBe('error');
    const errors = h.of('AgentErrorEvent');
    expect(errors.at(-1)!.error).toMatch(pattern);
    expect(h.statuses().at(-1)).toBe('error');
  };

  it('401: error status and an event that says to check the key', async () => {
    const h = await harness([reply.error(401, 'Incorrect API key provided')]);
    await h.session.sendMessage(say('hi'));
    expectError(h, /HTTP 401.*Incorrect API key provided.*llm_api_key/);
  });

  it('402 (a spent budget at the LLM gateway): paused, not retried, and run() makes the same call again', async () => {
    const h = await harness([reply.error(402, 'The conversation budget is spent'), reply.finish('done')]);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('paused');
    expect(h.of('AgentErrorEvent').at(-1)!.error).toMatch(/HTTP 402.*budget is spent: the conversation is paused/);
    expect(h.statuses().at(-1)).toBe('paused');
    await h.session.run();
    expect(h.session.status).toBe('finished');
  });

  it('a 429 is retried; one that persists is an error after the retries', async () => {
    const retryFast = { 'retry-after-ms': '10' };
    const llm = await startScriptedLlm([
      reply.error(429, 'slow down', retryFast),
      reply.finish('ok'),
      reply.error(429, 'slow down', retryFast),
      reply.error(429, 'slow down', retryFast),
    ]);
    cleanups.push(() => llm.close());
    const h = await harness([], { llm: { model: 'm', apiKey: 'k', baseUrl: llm.baseUrl, maxRetries: 1 } });
    await h.session.sendMessage(say('first'));
    expect(h.session.status).toBe('finished');
    await h.session.sendMessage(say('second'));
    expectError(h, /after 2 attempts \(HTTP 429\).*rate-limiting/);
    expect(llm.requests).toHaveLength(4);
  });

  it('a 500 that persists is an error after the retries', async () => {
    const llm = await startScriptedLlm([
      reply.error(500, 'upstream broke', { 'retry-after-ms': '10' }),
      reply.error(500, 'upstream broke', { 'retry-after-ms': '10' }),
    ]);
    cleanups.push(() => llm.close());
    const h = await harness([], { llm: { model: 'm', apiKey: 'k', baseUrl: llm.baseUrl, maxRetries: 1 } });
    await h.session.sendMessage(say('hi'));
    expectError(h, /after 2 attempts \(HTTP 500\).*upstream broke/);
  });

  it('a garbage response', async () => {
    const h = await harness([{ raw: '<html>this is not JSON</html>' }]);
    await h.session.sendMessage(say('hi'));
    expectError(h, /LLM request for scripted-model failed/);
  });

  it('a server that is down', async () => {
    const llm = await startScriptedLlm();
    const url = llm.baseUrl;
    await llm.close();
    const h = await harness([], { llm: { model: 'm', apiKey: 'k', baseUrl: url, maxRetries: 0 } });
    await h.session.sendMessage(say('hi'));
    expectError(h, /Check that llm_base_url .* is reachable/);
  });

  it('a server that does not answer in time', async () => {
    const llm = await startScriptedLlm([{ hang: true }]);
    cleanups.push(() => llm.close());
    const h = await harness([], {
      llm: { model: 'm', apiKey: 'k', baseUrl: llm.baseUrl, maxRetries: 0, timeoutMs: 300 },
    });
    await h.session.sendMessage(say('hi'));
    expectError(h, /did not answer within 0.3 s/);
  });

  it('a model with no provider: a clear error at start, and on every run', async () => {
    const h = await harness([], { llm: { model: 'gpt-4o', apiKey: 'k', baseUrl: null } });
    expectError(h, /use an "openai\/" or "anthropic\/" prefix, or set llm_base_url/);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('error');
    expect(h.of('AgentErrorEvent')).toHaveLength(2);
  });

  it('can run again after an error once the LLM is back', async () => {
    const h = await harness([reply.error(401), reply.finish('back')]);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('error');
    await h.session.run();
    expect(h.session.status).toBe('finished');
  });
});

describe('AgentSession with MCP servers', () => {
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const fixture = join(import.meta.dirname, '../fixtures/agent/mcp-reverse-server.ts');

  it('calls a tool of a stdio server spawned in the workspace; a server that fails to start is an AgentErrorEvent', async () => {
    const h = await harness(
      [reply.tool('reverse_text', { text: 'abc' }), reply.tool('fail', {}), reply.finish('reversed')],
      {
        mcpConfig: {
          stdio_servers: [
            {
              name: 'rev',
              command: process.execPath,
              args: ['--import', tsxLoader, fixture],
              env: { GREETING: 'hi', UNSET: null },
            },
            { name: 'broken', command: 'definitely-not-a-command-xyz', args: [], env: {} },
          ],
          sse_servers: [],
          shttp_servers: [],
        },
      },
    );
    const prompt = h.of('SystemPromptEvent')[0]!;
    expect(prompt.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute_bash', 'reverse_text', 'fail']));
    const startError = h.of('AgentErrorEvent')[0]!;
    expect(startError.error).toMatch(/MCP server broken is unavailable/);

    await h.session.sendMessage(say('Reverse abc'));
    expect(h.session.status).toBe('finished');
    expect(h.llm.requests[0]!.body.tools.map((t: any) => t.function.name)).toContain('reverse_text');
    const [call, failing] = h.of('ActionEvent');
    expect(call).toMatchObject({ tool_name: 'reverse_text', action: { kind: 'MCPToolAction', data: { text: 'abc' } } });
    const [obs, failed] = h.of('ObservationEvent');
    expect(obs!.observation).toMatchObject({ kind: 'MCPToolObservation', is_error: false });
    expect(observationText(obs!)).toContain('cba');
    expect(observationText(obs!)).toContain(`cwd ${h.workspaceDir}`);
    expect(observationText(obs!)).toContain('GREETING=hi');
    expect(failing!.tool_name).toBe('fail');
    expect(failed!.observation).toMatchObject({ kind: 'MCPToolObservation', is_error: true });
  });

  it('calls tools of remote servers over streamable HTTP and SSE, with the api_key as a bearer token', async () => {
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    const { SSEServerTransport } = await import('@modelcontextprotocol/sdk/server/sse.js');
    const { z } = await import('zod');
    const authHeaders: (string | undefined)[] = [];
    const mcpServer = (name: string) => {
      const server = new McpServer({ name, version: '1.0.0' });
      server.registerTool(
        `${name}_shout`,
        { description: 'upper-cases a text', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text: `${name}:${text.toUpperCase()}` }] }),
      );
      return server;
    };
    const sse = new Map<string, InstanceType<typeof SSEServerTransport>>();
    const http = createServer(async (req, res) => {
      authHeaders.push(req.headers.authorization);
      if (req.url === '/mcp') {
        // Stateless: a server and transport per request.
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await mcpServer('web').connect(transport);
        return transport.handleRequest(req, res);
      }
      if (req.url === '/sse' && req.method === 'GET') {
        const transport = new SSEServerTransport('/messages', res);
        sse.set(transport.sessionId, transport);
        return mcpServer('events').connect(transport);
      }
      if (req.url?.startsWith('/messages')) {
        const id = new URL(req.url, 'http://x').searchParams.get('sessionId') ?? '';
        return sse.get(id)!.handlePostMessage(req, res);
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          http.closeAllConnections();
          http.close(() => r());
        }),
    );
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const h = await harness(
      [reply.tool('web_shout', { text: 'hi' }), reply.tool('events_shout', { text: 'yo' }), reply.finish('ok')],
      {
        mcpConfig: {
          stdio_servers: [],
          shttp_servers: [{ url: `${base}/mcp`, api_key: 'remote-key-1' }],
          sse_servers: [{ url: `${base}/sse`, api_key: 'remote-key-2' }],
        },
      },
    );
    expect(h.of('AgentErrorEvent')).toEqual([]);
    await h.session.sendMessage(say('shout'));
    expect(h.of('ObservationEvent').map(observationText)).toEqual(['web:HI', 'events:YO', 'ok']);
    expect(new Set(authHeaders)).toEqual(new Set(['Bearer remote-key-1', 'Bearer remote-key-2']));
  });

  it('reports an unreachable remote server without failing the session', async () => {
    const closed = await startScriptedLlm();
    await closed.close();
    const host = new URL(closed.baseUrl).host;
    const h = await harness([reply.finish('ok')], {
      mcpConfig: {
        stdio_servers: [],
        sse_servers: [{ url: `http://${host}/sse`, api_key: 'key-1234' }],
        shttp_servers: [{ url: `http://${host}/mcp`, api_key: null }],
      },
    });
    const errors = h
      .of('AgentErrorEvent')
      .map((e) => e.error)
      .sort();
    expect(errors).toEqual([
      expect.stringContaining(`MCP server ${host}/mcp is unavailable`),
      expect.stringContaining(`MCP server ${host}/sse is unavailable`),
    ]);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('finished');
  });
});

describe('AgentSession replay', () => {
  it('re-executes an OpenHands V0 trajectory without the LLM, then continues with the LLM when asked', async () => {
    const trajectory = JSON.stringify([
      { id: 0, source: 'user', action: 'message', args: { content: 'Make a greeting file' } },
      { id: 1, source: 'agent', action: 'run', args: { command: 'mkdir -p out && echo made' } },
      { id: 2, source: 'environment', observation: 'run', content: 'made', extras: {} },
      { id: 3, source: 'agent', action: 'write', args: { path: 'out/greeting.txt', content: 'hi there\n' } },
      {
        id: 4,
        source: 'agent',
        action: 'edit',
        args: { command: 'str_replace', path: 'out/greeting.txt', old_str: 'hi', new_str: 'hello' },
      },
      { id: 5, source: 'agent', action: 'finish', args: { final_thought: 'done' } },
    ]);
    const h = await harness([reply.bash('cat out/greeting.txt'), reply.finish('continued')]);
    await h.session.replay(trajectory, { run: true });

    expect(readFileSync(join(h.workspaceDir, 'out/greeting.txt'), 'utf8')).toBe('hello there\n');
    expect(h.of('ActionEvent').map((e) => e.tool_name)).toEqual([
      'execute_bash',
      'str_replace_editor',
      'str_replace_editor',
      'execute_bash',
      'finish',
    ]);
    expect(h.of('MessageEvent')[0]).toMatchObject({
      source: 'user',
      llm_message: { content: [{ type: 'text', text: 'Make a greeting file' }] },
    });
    // The model continued from the replayed history.
    const history = JSON.stringify(h.llm.requests[0]!.body.messages);
    expect(history).toContain('Make a greeting file');
    expect(history).toContain('mkdir -p out');
    expect(observationText(h.of('ObservationEvent')[3]!)).toContain('hello there');
    expect(h.session.status).toBe('finished');
  });

  it('replays the events of a recorded conversation in a fresh workspace, and stays idle without run', async () => {
    const first = await harness([
      reply.bash('echo one > one.txt'),
      reply.tool('str_replace_editor', { command: 'create', path: 'two.txt', file_text: 'two' }),
      reply.finish('ok'),
    ]);
    await first.session.sendMessage(say('record'));
    const second = await harness([]);
    await second.session.replay(first.events);
    expect(readFileSync(join(second.workspaceDir, 'one.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(join(second.workspaceDir, 'two.txt'), 'utf8')).toBe('two');
    expect(second.llm.requests).toHaveLength(0);
    expect(second.session.status).toBe('idle');
  });

  it('an unreadable trajectory is an AgentErrorEvent and status error', async () => {
    const h = await harness([]);
    await h.session.replay('{not json');
    expect(h.session.status).toBe('error');
    expect(h.of('AgentErrorEvent')[0]!.error).toMatch(/replay_json is not valid JSON/);
  });
});

describe('AgentSession carried over to a new process (sandbox paused and resumed)', () => {
  it('restores history, metrics and a paused loop from the state file, and continues', async () => {
    const llm = await startScriptedLlm([
      reply.bash('echo step-one > one.txt && echo wrote'),
      { hang: true },
      reply.finish('continued after resume'),
    ]);
    const workspaceDir = mkdtempSync(join(tmpdir(), 'agent-ws-'));
    const stateFile = join(mkdtempSync(join(tmpdir(), 'agent-state-')), 'conversations/c1.json');
    cleanups.push(async () => {
      await llm.close();
      rmSync(workspaceDir, { recursive: true, force: true });
    });
    const make = (events: AgentEvent[]) =>
      new AgentSession({
        conversationId: 'c1',
        workspaceDir,
        stateFile,
        llm: { model: 'm', apiKey: null, baseUrl: llm.baseUrl, maxRetries: 0 },
        emit: async (e) => void events.push(...e),
      });

    const before: AgentEvent[] = [];
    const first = make(before);
    await first.start();
    const running = first.sendMessage({
      content: [
        { type: 'text', text: 'Work, see http://img' },
        { type: 'image', image_urls: ['http://127.0.0.1:9/a.png'] },
      ],
      run: true,
    });
    await waitUntil('the second model call', () => llm.requests.length === 2);
    await first.close(); // the sandbox stops mid-call
    await running;

    const after: AgentEvent[] = [];
    const second = make(after);
    cleanups.push(() => second.close());
    await second.start();
    expect(second.status).toBe('paused');
    expect(second.metrics).toMatchObject({ llm_calls: 1, prompt_tokens: 100 });
    await second.run();
    expect(second.status).toBe('finished');
    expect(second.metrics.llm_calls).toBe(2);
    // The model saw the same conversation as before the stop, images included.
    expect(llm.requests[2]!.body.messages).toEqual(llm.requests[1]!.body.messages);
    expect(JSON.stringify(llm.requests[2]!.body.messages)).toContain('wrote');
    expect(JSON.stringify(llm.requests[2]!.body.messages)).toContain('"url":"http://127.0.0.1:9/a.png"');
    expect(readFileSync(join(workspaceDir, 'one.txt'), 'utf8')).toBe('step-one\n');
    const statuses = after
      .filter((e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status')
      .map((e) => (e as EventOf<'ConversationStateUpdateEvent'>).value);
    expect(statuses).toEqual(['paused', 'running', 'finished']);
  });

  it('restores an action waiting for confirmation', async () => {
    const llm = await startScriptedLlm([reply.bash('echo ok > confirmed.txt'), reply.finish('done')]);
    const workspaceDir = mkdtempSync(join(tmpdir(), 'agent-ws-'));
    const stateFile = join(workspaceDir, '..', `${workspaceDir.split('/').pop()}-state.json`);
    cleanups.push(async () => {
      await llm.close();
      rmSync(workspaceDir, { recursive: true, force: true });
      rmSync(stateFile, { force: true });
    });
    const make = () =>
      new AgentSession({
        conversationId: 'c2',
        workspaceDir,
        stateFile,
        confirmationMode: true,
        llm: { model: 'm', apiKey: null, baseUrl: llm.baseUrl, maxRetries: 0 },
        emit: async () => undefined,
      });
    const first = make();
    await first.start();
    await first.sendMessage(say('write'));
    expect(first.status).toBe('waiting_for_confirmation');
    await first.close();

    const second = make();
    cleanups.push(() => second.close());
    await second.start();
    expect(second.status).toBe('waiting_for_confirmation');
    await second.respondToConfirmation({ accept: true });
    expect(readFileSync(join(workspaceDir, 'confirmed.txt'), 'utf8')).toBe('ok\n');
    expect(second.status).toBe('finished');
  });

  it('starts afresh, saying so, when the state file cannot be read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-state-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'state.json'), '{"version": 1, "hist');
    const h = await harness([reply.finish('ok')], { stateFile: join(dir, 'state.json') });
    expect(h.of('AgentErrorEvent')[0]!.error).toMatch(/saved conversation state could not be read/);
    await h.session.sendMessage(say('hi'));
    expect(h.session.status).toBe('finished');
    expect(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).status).toBe('finished');
  });
});

describe('AgentSession close', () => {
  it('kills commands left running in the background', async () => {
    const h = await harness([reply.bash('sleep 300 & echo $! > bg.pid'), reply.finish('ok')]);
    await h.session.sendMessage(say('start a server'));
    const pid = Number(readFileSync(join(h.workspaceDir, 'bg.pid'), 'utf8'));
    expect(() => process.kill(pid, 0)).not.toThrow();
    await h.session.close();
    await waitUntil('the background command to die', () => {
      try {
        process.kill(pid, 0);
        // a zombie until reaped by init: check its state
        return execFileSync('ps', ['-o', 'stat=', '-p', String(pid)])
          .toString()
          .trim()
          .startsWith('Z');
      } catch {
        return true;
      }
    });
  });
});
