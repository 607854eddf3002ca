import type { GatewaySink, LlmGateway } from '#shared/llm/gateway.ts';

/**
 * The AWS side of the gateway: a Lambda function URL event (payload 2.0) in, Lambda's response stream
 * out. In response-streaming mode the status and headers go first, as a JSON prelude that
 * `awslambda.HttpResponseStream.from` writes (then eight zero bytes), and the body follows as written;
 * Lambda's runtime is the only place that helper exists, so this writes the same framing itself onto the
 * stream it is given (the tier emulates the runtime's side: test/tier/).
 */
export interface FunctionUrlCall {
  event: {
    rawPath?: string;
    headers?: Record<string, string | undefined>;
    body?: string;
    isBase64Encoded?: boolean;
    requestContext?: { requestId?: string; http?: { method?: string; path?: string } };
  };
  stream: NodeJS.WritableStream & { setContentType?: (t: string) => void };
}

/** The HTTP integration prelude Lambda's runtime expects before a streamed body (HttpResponseStream.from). */
export const PRELUDE_DELIMITER = Buffer.alloc(8);

export async function serveFunctionUrl(call: FunctionUrlCall, gateway: LlmGateway): Promise<void> {
  const { event, stream } = call;
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  const body = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
  const abort = new AbortController();
  stream.on('close', () => abort.abort());
  stream.on('error', () => abort.abort());
  const method = event.requestContext?.http?.method ?? 'POST';
  const sink: GatewaySink = {
    head(statusCode, h) {
      stream.setContentType?.('application/vnd.awslambda.http-integration-response');
      stream.write(JSON.stringify({ statusCode, headers: h }));
      stream.write(PRELUDE_DELIMITER);
    },
    write(chunk) {
      stream.write(typeof chunk === 'string' ? chunk : Buffer.from(chunk));
    },
    end() {
      stream.end();
    },
  };
  const requestId = event.requestContext?.requestId ?? crypto.randomUUID();
  if (method !== 'POST') {
    sink.head(405, { 'content-type': 'application/json', allow: 'POST', 'x-request-id': requestId });
    sink.write(JSON.stringify({ detail: 'Method Not Allowed' }));
    return sink.end();
  }
  await gateway.handle(
    { path: event.rawPath ?? event.requestContext?.http?.path ?? '', headers, body, requestId, signal: abort.signal },
    sink,
  );
}
