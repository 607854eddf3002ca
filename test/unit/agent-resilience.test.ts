import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { applyCondensation, planCondensation } from '#sandbox/agent/condenser.ts';
import type { HistoryEntry } from '#sandbox/agent/history.ts';
import { isContextWindowError, retryDelayMs } from '#sandbox/agent/llm.ts';
import { needsConfirmation, splitRisk } from '#sandbox/agent/toolbox.ts';
import { htmlToText } from '#sandbox/agent/tools/web.ts';

const policy = { maxRetries: 4, baseDelayMs: 1000, maxDelayMs: 60_000 };
const apiError = (statusCode: number | undefined, headers: Record<string, string> = {}, message = 'failed') =>
  new APICallError({
    message,
    url: 'http://llm.test/v1/chat/completions',
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
    responseBody: message,
  });

describe('which LLM failures are retried, after how long', () => {
  it('backs off exponentially for 429, 5xx and time-outs, capped', () => {
    expect(retryDelayMs(apiError(429), 0, policy, false)).toBe(1000);
    expect(retryDelayMs(apiError(503), 2, policy, false)).toBe(4000);
    expect(retryDelayMs(apiError(500), 10, policy, false)).toBe(60_000);
    expect(retryDelayMs(new Error('anything'), 1, policy, true)).toBe(2000);
  });

  it('honours retry-after-ms, retry-after in seconds or as a date, never past the cap', () => {
    expect(retryDelayMs(apiError(429, { 'retry-after-ms': '250' }), 0, policy, false)).toBe(250);
    expect(retryDelayMs(apiError(429, { 'Retry-After': '7' }), 0, policy, false)).toBe(7000);
    expect(retryDelayMs(apiError(429, { 'retry-after': '86400' }), 0, policy, false)).toBe(60_000);
    const soon = new Date(Date.now() + 5000).toUTCString();
    expect(retryDelayMs(apiError(503, { 'retry-after': soon }), 0, policy, false)).toBeGreaterThan(3000);
  });

  it('does not retry what retrying cannot fix; retries dropped connections', () => {
    expect(retryDelayMs(apiError(401), 0, policy, false)).toBeNull();
    expect(retryDelayMs(apiError(400), 0, policy, false)).toBeNull();
    expect(retryDelayMs(new TypeError('fetch failed'), 0, policy, false)).toBe(1000);
    expect(retryDelayMs(new Error('read ECONNRESET'), 0, policy, false)).toBe(1000);
    expect(retryDelayMs(new Error('Invalid JSON response'), 0, policy, false)).toBeNull();
  });

  it("recognises context-window errors in the providers' wordings", () => {
    expect(isContextWindowError(apiError(400, {}, "This model's maximum context length is 128000 tokens"))).toBe(true);
    expect(isContextWindowError(apiError(400, {}, 'prompt is too long: 210000 tokens > 200000 maximum'))).toBe(true);
    expect(isContextWindowError(apiError(400, {}, 'context_length_exceeded'))).toBe(true);
    expect(isContextWindowError(apiError(400, {}, 'Invalid value for temperature'))).toBe(false);
    expect(isContextWindowError(apiError(429, {}, 'too many tokens per minute'))).toBe(false);
  });
});

describe('what the condenser forgets', () => {
  const user = (t: string): HistoryEntry => ({ message: { role: 'user', content: t }, eventIds: [`u-${t}`] });
  const call = (n: number): HistoryEntry => ({
    message: { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${n}`, toolName: 'think', input: {} }] },
    eventIds: [`a${n}`],
  });
  const result = (n: number): HistoryEntry => ({
    message: {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: `c${n}`, toolName: 'think', output: { type: 'text', value: 'ok' } }],
    },
    eventIds: [`o${n}`],
  });
  const history = (steps: number) => [
    user('task'),
    ...Array.from({ length: steps }, (_, i) => [call(i), result(i)]).flat(),
  ];

  it('nothing below the size; above it, down to about half, never splitting a call from its result', () => {
    expect(planCondensation(history(10), 40, false)).toBeNull();
    const h = history(30); // 61 entries
    const plan = planCondensation(h, 40, false)!;
    expect(h[plan.head - 1]!.message.role).not.toBe('assistant');
    expect(h[plan.tailStart]!.message.role).not.toBe('tool');
    const condensed = applyCondensation(h, plan, 'S');
    expect(condensed.length).toBeLessThanOrEqual(21);
    expect(condensed[0]).toEqual(h[0]);
    expect(condensed[plan.head]!.summary).toBe(true);
    expect(JSON.stringify(condensed[plan.head]!.message)).toContain('S');
    // Every result left has its call.
    const calls = new Set(
      condensed.flatMap((e) =>
        (Array.isArray(e.message.content) ? e.message.content : [])
          .filter((p: any) => p.type === 'tool-call')
          .map((p: any) => p.toolCallId),
      ),
    );
    for (const e of condensed)
      if (e.message.role === 'tool')
        for (const p of e.message.content) expect(calls.has((p as { toolCallId: string }).toolCallId)).toBe(true);
  });

  it('forced (context overflow): halves any history that has a middle; too short is null', () => {
    expect(planCondensation(history(8), 120, true)).not.toBeNull();
    expect(planCondensation(history(1), 120, true)).toBeNull();
  });
});

describe('risk and confirmation', () => {
  it('reads the risk the model gave (UNKNOWN otherwise) and takes it out of the arguments', () => {
    expect(splitRisk({ command: 'ls', security_risk: 'low' })).toEqual({ risk: 'LOW', args: { command: 'ls' } });
    expect(splitRisk({ command: 'ls', security_risk: 'catastrophic' })).toEqual({
      risk: 'UNKNOWN',
      args: { command: 'ls' },
    });
    expect(splitRisk(null)).toEqual({ risk: 'UNKNOWN', args: {} });
  });

  it('without an analyzer every action waits; with one only HIGH and UNKNOWN; think and finish never', () => {
    const a = (toolName: string, risk: 'LOW' | 'MEDIUM' | 'HIGH' | 'UNKNOWN') => [{ toolName, risk, known: true }];
    expect(needsConfirmation(a('execute_bash', 'LOW'), false)).toBe(true);
    expect(needsConfirmation(a('execute_bash', 'LOW'), true)).toBe(false);
    expect(needsConfirmation(a('execute_bash', 'MEDIUM'), true)).toBe(false);
    expect(needsConfirmation(a('execute_bash', 'HIGH'), true)).toBe(true);
    expect(needsConfirmation(a('execute_bash', 'UNKNOWN'), true)).toBe(true);
    expect(needsConfirmation(a('finish', 'UNKNOWN'), true)).toBe(false);
    expect(needsConfirmation(a('think', 'HIGH'), false)).toBe(false);
  });
});

describe('htmlToText', () => {
  it('drops scripts, styles, comments and tags, decodes entities, keeps paragraphs and list items apart', () => {
    const html =
      '<html><head><title>T</title><script>alert(1)</script><style>p{}</style></head><body><!-- hidden --><p>A &amp; B &#233;&#x20AC;</p><ul><li>x</li><li>y</li></ul><div>end</div></body></html>';
    expect(htmlToText(html)).toBe('T\nA & B é€\n\n- x\n- y\nend');
  });
});
