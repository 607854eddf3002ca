import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible chat-completions server on 127.0.0.1, standing in for the LLM (an
 * outside service) in tests. Each POST to `/v1/chat/completions` takes the next reply of the script;
 * it answers in JSON or, when the request asks for `stream: true`, as server-sent events. Every request
 * is recorded so a test can check what the model was sent.
 */

export interface ToolCallReply {
  name: string;
  args: unknown;
  id?: string;
}

export type ScriptedReply =
  /** An assistant turn: text, tool calls, or both. */
  | { text?: string; toolCalls?: ToolCallReply[]; usage?: { prompt_tokens: number; completion_tokens: number } }
  /** An HTTP error with an OpenAI-style error body. */
  | { error: { status: number; message?: string; headers?: Record<string, string> } }
  /** Any body at all (e.g. garbage) with a status (default 200). */
  | { raw: string; status?: number; contentType?: string }
  /** Never answers; the connection stays open until the client gives up or the server closes. */
  | { hang: true };

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export type ScriptStep = ScriptedReply | ((request: RecordedRequest) => ScriptedReply);

export interface ScriptedLlm {
  /** Base URL for `llm_base_url`, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Adds replies to the end of the script. */
  enqueue(...steps: ScriptStep[]): void;
  /** Replies not used yet. */
  readonly remaining: number;
  close(): Promise<void>;
}

/** Short forms for script steps. */
export const reply = {
  text: (text: string): ScriptedReply => ({ text }),
  tool: (name: string, args: unknown, text?: string): ScriptedReply => ({
    toolCalls: [{ name, args }],
    ...(text ? { text } : {}),
  }),
  bash: (command: string): ScriptedReply => reply.tool('execute_bash', { command }),
  finish: (message: string): ScriptedReply => reply.tool('finish', { message }),
  error: (status: number, message = `scripted error ${status}`, headers?: Record<string, string>): ScriptedReply => ({
    error: { status, message, ...(headers ? { headers } : {}) },
  }),
};

const DEFAULT_USAGE = { prompt_tokens: 100, completion_tokens: 20 };

let callCounter = 0;

function completion(r: Extract<ScriptedReply, { text?: string }>, model: string) {
  const toolCalls = (r.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_${++callCounter}`,
    type: 'function' as const,
    function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) },
  }));
  const usage = r.usage ?? DEFAULT_USAGE;
  return {
    toolCalls,
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    finishReason: toolCalls.length ? 'tool_calls' : 'stop',
    id: `chatcmpl-${++callCounter}`,
    model,
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export async function startScriptedLlm(steps: ScriptStep[] = []): Promise<ScriptedLlm> {
  const script = [...steps];
  const requests: RecordedRequest[] = [];

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      // keep the text
    }
    const recorded: RecordedRequest = { path: req.url ?? '', headers: req.headers, body };
    requests.push(recorded);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      return sendJson(res, 404, { error: { message: `scripted LLM: no route ${req.method} ${req.url}` } });
    }
    const step = script.shift();
    if (!step) return sendJson(res, 500, { error: { message: 'scripted LLM: the script has no reply left' } });
    const r = typeof step === 'function' ? step(recorded) : step;

    if ('hang' in r) return; // left open on purpose
    if ('error' in r) {
      return sendJson(
        res,
        r.error.status,
        { error: { message: r.error.message ?? `error ${r.error.status}`, type: 'scripted_error' } },
        r.error.headers,
      );
    }
    if ('raw' in r) {
      res.writeHead(r.status ?? 200, { 'content-type': r.contentType ?? 'application/json' });
      return res.end(r.raw);
    }
    const c = completion(r, body?.model ?? 'scripted');
    const created = Math.floor(Date.now() / 1000);
    if (!body?.stream) {
      return sendJson(res, 200, {
        id: c.id,
        object: 'chat.completion',
        created,
        model: c.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: r.text ?? null,
              ...(c.toolCalls.length ? { tool_calls: c.toolCalls } : {}),
            },
            finish_reason: c.finishReason,
          },
        ],
        usage: c.usage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (choices: unknown[], extra: object = {}) =>
      res.write(
        `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created, model: c.model, choices, ...extra })}\n\n`,
      );
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    // Text in two pieces and tool arguments in two pieces, as real servers split them.
    if (r.text) {
      const half = Math.ceil(r.text.length / 2);
      chunk([{ index: 0, delta: { content: r.text.slice(0, half) }, finish_reason: null }]);
      chunk([{ index: 0, delta: { content: r.text.slice(half) }, finish_reason: null }]);
    }
    c.toolCalls.forEach((t, index) => {
      const a = t.function.arguments;
      const half = Math.ceil(a.length / 2);
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index, id: t.id, type: 'function', function: { name: t.function.name, arguments: a.slice(0, half) } },
            ],
          },
          finish_reason: null,
        },
      ]);
      chunk([
        { index: 0, delta: { tool_calls: [{ index, function: { arguments: a.slice(half) } }] }, finish_reason: null },
      ]);
    });
    chunk([{ index: 0, delta: {}, finish_reason: c.finishReason }]);
    chunk([], { usage: c.usage });
    res.end('data: [DONE]\n\n');
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...more) => script.push(...more),
    get remaining() {
      return script.length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
