import { generateText, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EventFactory, agentEventSchema } from '#sandbox/agent/events.ts';
import { LlmConfigError, MetricsCounter, priceFor, resolveModel } from '#sandbox/agent/llm.ts';
import { SECRET_MASK, secretMasker } from '#sandbox/agent/mask.ts';
import { parseTrajectory, TrajectoryError } from '#sandbox/agent/replay.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';

describe('resolveModel', () => {
  const info = (m: ReturnType<typeof resolveModel>) =>
    typeof m === 'string' ? { provider: 'gateway', modelId: m } : { provider: m.provider, modelId: m.modelId };

  it('uses an OpenAI-compatible endpoint when llm_base_url is set, without a LiteLLM prefix in the model id', () => {
    expect(
      info(resolveModel({ model: 'openai/qwen2.5-coder', apiKey: null, baseUrl: 'http://127.0.0.1:8000/v1' })),
    ).toEqual({ provider: 'openai-compatible.chat', modelId: 'qwen2.5-coder' });
    expect(
      info(resolveModel({ model: 'litellm_proxy/claude', apiKey: 'k', baseUrl: 'http://127.0.0.1:4000' })),
    ).toEqual({ provider: 'openai-compatible.chat', modelId: 'claude' });
    expect(
      info(resolveModel({ model: 'meta-llama/Llama-3-70b', apiKey: 'k', baseUrl: 'http://127.0.0.1:4000' })).modelId,
    ).toBe('meta-llama/Llama-3-70b');
  });

  it('picks OpenAI and Anthropic by prefix', () => {
    expect(info(resolveModel({ model: 'openai/gpt-4o', apiKey: 'sk' }))).toEqual({
      provider: 'openai.chat',
      modelId: 'gpt-4o',
    });
    expect(info(resolveModel({ model: 'anthropic/claude-sonnet-4-5', apiKey: 'sk', baseUrl: '' }))).toEqual({
      provider: 'anthropic.messages',
      modelId: 'claude-sonnet-4-5',
    });
  });

  it('explains what is missing', () => {
    expect(() => resolveModel({ model: 'gpt-4o', apiKey: 'sk' })).toThrow(LlmConfigError);
    expect(() => resolveModel({ model: 'gpt-4o', apiKey: 'sk' })).toThrow(
      /"openai\/" or "anthropic\/" prefix, or set llm_base_url/,
    );
    expect(() => resolveModel({ model: 'anthropic/claude-sonnet-4-5', apiKey: null })).toThrow(
      /llm_api_key is not set/,
    );
    expect(() => resolveModel({ model: ' ', apiKey: 'k', baseUrl: 'http://127.0.0.1:1' })).toThrow(
      /llm_model is empty/,
    );
  });
});

describe('prices and metrics', () => {
  it('finds a dated model by its family, prefers the longest match, and lets the config override', () => {
    expect(priceFor({ model: 'anthropic/claude-sonnet-4-5-20250929', apiKey: null })).toEqual({
      price: { input: 3, output: 15 },
      source: 'table',
    });
    expect(priceFor({ model: 'openai/gpt-4o-mini-2024-07-18', apiKey: null }).price).toEqual({
      input: 0.15,
      output: 0.6,
    });
    expect(priceFor({ model: 'openai/gpt-4o', apiKey: null, pricing: { input: 1, output: 2 } })).toEqual({
      price: { input: 1, output: 2 },
      source: 'config',
    });
    expect(priceFor({ model: 'my-local-model', apiKey: null }).source).toBe('unknown');
  });

  it('accumulates tokens and cost per call', () => {
    const m = new MetricsCounter({ model: 'openai/gpt-4o', apiKey: null }, 5);
    m.add({ inputTokens: 1_000_000, outputTokens: 100_000 });
    m.add({ inputTokens: 1000, outputTokens: undefined });
    expect(m.snapshot()).toEqual({
      model: 'openai/gpt-4o',
      accumulated_cost: 2.5 + 1 + 0.0025,
      prompt_tokens: 1_001_000,
      completion_tokens: 100_000,
      llm_calls: 2,
      max_budget_per_task: 5,
      price_source: 'table',
      note: null,
    });
  });
});

describe('secretMasker', () => {
  it('masks every occurrence at any depth, longest secret first, but not ids or kinds', () => {
    const mask = secretMasker(['abcd1234', 'abcd1234-extended', 'ab', '']);
    const event = {
      kind: 'X',
      id: 'abcd1234',
      out: ['x abcd1234-extended y', { deep: 'abcd1234abcd1234' }],
      ab: 'ab stays: too short to mask',
    };
    expect(mask(event)).toEqual({
      kind: 'X',
      id: 'abcd1234',
      out: [`x ${SECRET_MASK} y`, { deep: `${SECRET_MASK}${SECRET_MASK}` }],
      ab: 'ab stays: too short to mask',
    });
  });
});

describe('EventFactory', () => {
  it('makes valid events with 32-hex ids and strictly increasing timestamps', () => {
    const f = new EventFactory();
    const events = Array.from({ length: 50 }, () => f.make('PauseEvent', 'user', {}));
    for (const e of events) expect(agentEventSchema.parse(e)).toEqual(e);
    const ts = events.map((e) => e.timestamp);
    expect(new Set(ts).size).toBe(50);
    expect([...ts].sort()).toEqual(ts);
  });

  it('the schema rejects a malformed event', () => {
    expect(
      agentEventSchema.safeParse({ kind: 'ActionEvent', id: 'x', timestamp: 'now', source: 'agent' }).success,
    ).toBe(false);
    expect(
      agentEventSchema.safeParse({
        kind: 'NoSuchEvent',
        id: 'a'.repeat(32),
        timestamp: new Date().toISOString(),
        source: 'agent',
      }).success,
    ).toBe(false);
  });
});

describe('parseTrajectory', () => {
  it('reads V0 actions and skips observations, finish and bookkeeping', () => {
    const steps = parseTrajectory({
      trajectory: [
        { action: 'system', args: { content: 'prompt' } },
        { action: 'message', source: 'user', args: { content: 'hi', image_urls: ['http://x/y.png'] } },
        { action: 'run', args: { command: 'ls' } },
        { observation: 'run', content: 'a.txt' },
        { action: 'read', args: { path: 'a.txt' } },
        { action: 'edit', args: { path: 'a.txt', command: 'insert', insert_line: 1, new_str: 'x', old_str: null } },
        { action: 'call_tool_mcp', args: { name: 'reverse_text', arguments: { text: 'ab' } } },
        { action: 'think', args: { thought: 'hmm' } },
        { action: 'finish', args: {} },
      ],
    });
    expect(steps).toEqual([
      { type: 'message', role: 'user', text: 'hi', imageUrls: ['http://x/y.png'] },
      { type: 'action', toolName: 'execute_bash', args: { command: 'ls' } },
      { type: 'action', toolName: 'str_replace_editor', args: { command: 'view', path: 'a.txt' } },
      {
        type: 'action',
        toolName: 'str_replace_editor',
        args: { command: 'insert', path: 'a.txt', insert_line: 1, new_str: 'x' },
      },
      { type: 'action', toolName: 'reverse_text', args: { text: 'ab' } },
      { type: 'action', toolName: 'think', args: { thought: 'hmm' } },
    ]);
  });

  it('reads V1 events', () => {
    expect(
      parseTrajectory([
        { kind: 'MessageEvent', llm_message: { role: 'user', content: [{ type: 'text', text: 'go' }] } },
        { kind: 'ActionEvent', tool_name: 'execute_bash', action: { kind: 'ExecuteBashAction', command: 'ls' } },
        { kind: 'ActionEvent', tool_name: 'reverse_text', action: { kind: 'MCPToolAction', data: { text: 'x' } } },
        { kind: 'ActionEvent', tool_name: 'finish', action: { kind: 'FinishAction', message: 'done' } },
      ]),
    ).toEqual([
      { type: 'message', role: 'user', text: 'go', imageUrls: [] },
      { type: 'action', toolName: 'execute_bash', args: { command: 'ls' } },
      { type: 'action', toolName: 'reverse_text', args: { text: 'x' } },
    ]);
  });

  it('explains an unusable trajectory', () => {
    expect(() => parseTrajectory('nope')).toThrow(/not valid JSON/);
    expect(() => parseTrajectory('{"a": 1}')).toThrow(/must be a list/);
    expect(() => parseTrajectory('[{"observation": "run"}]')).toThrow(TrajectoryError);
  });
});

describe('the scripted LLM', () => {
  let llm: ScriptedLlm;
  beforeAll(async () => {
    llm = await startScriptedLlm();
  });
  afterAll(() => llm.close());
  const model = () => resolveModel({ model: 'scripted', apiKey: 'sk-scripted', baseUrl: llm.baseUrl });
  const tools = { get_weather: tool({ description: 'weather', inputSchema: z.object({ city: z.string() }) }) };

  it('answers tool calls with usage, without streaming', async () => {
    llm.enqueue({
      toolCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }],
      text: 'checking',
      usage: { prompt_tokens: 7, completion_tokens: 3 },
    });
    const r = await generateText({ model: model(), prompt: 'weather?', tools, maxRetries: 0 });
    expect(r.text).toBe('checking');
    expect(r.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['get_weather', { city: 'Oslo' }]]);
    expect(r.usage).toMatchObject({ inputTokens: 7, outputTokens: 3 });
    expect(llm.requests.at(-1)!.headers.authorization).toBe('Bearer sk-scripted');
    expect(llm.requests.at(-1)!.body.stream).toBeFalsy();
  });

  it('streams text and tool calls in pieces, with usage', async () => {
    llm.enqueue({
      toolCalls: [{ name: 'get_weather', args: { city: 'Bergen' } }],
      text: 'streaming along',
      usage: { prompt_tokens: 11, completion_tokens: 5 },
    });
    const r = streamText({ model: model(), prompt: 'weather?', tools, maxRetries: 0 });
    expect(await r.text).toBe('streaming along');
    expect((await r.toolCalls).map((c) => c.input)).toEqual([{ city: 'Bergen' }]);
    expect(await r.usage).toMatchObject({ inputTokens: 11, outputTokens: 5 });
    expect(llm.requests.at(-1)!.body.stream).toBe(true);
  });

  it('answers scripted errors and says when the script is used up', async () => {
    llm.enqueue(reply.error(401, 'bad key'));
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0 })).rejects.toThrow(/bad key/);
    expect(llm.remaining).toBe(0);
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0 })).rejects.toThrow(/no reply left/);
  });
});
