// One Lambda execution environment: a Node process that loads a function's bundle from cdk.out the
// way the Lambda Node runtime does (LAMBDA_TASK_ROOT + _HANDLER "file.export") and runs one
// invocation at a time, received over IPC. Plain JavaScript: it must not need the test's loaders.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

// Lambda's runtime global for response streaming (it exists only there): `streamifyResponse` marks a
// handler that takes (event, responseStream, context); `HttpResponseStream.from` writes the HTTP
// integration prelude (status and headers as JSON, then eight zero bytes) before the body.
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
globalThis.awslambda = {
  streamifyResponse: (h) => Object.assign(h, { [STREAMING]: 'response' }),
  HttpResponseStream: {
    from(stream, prelude) {
      stream.setContentType('application/vnd.awslambda.http-integration-response');
      stream.write(JSON.stringify(prelude));
      stream.write(Buffer.alloc(8));
      return stream;
    },
  },
};

const [file, exportName] = process.env._HANDLER.split('.');
const root = process.env.LAMBDA_TASK_ROOT;
const path = ['.mjs', '.js', '.cjs'].map((ext) => join(root, file + ext)).find(existsSync);
let handler;
let initError;
try {
  if (!path) throw new Error(`Cannot find module '${file}' in ${root}`);
  const mod = await import(pathToFileURL(path).href);
  handler = mod[exportName];
  if (typeof handler !== 'function') throw new Error(`${file}.${exportName} is undefined or not exported`);
} catch (err) {
  initError = err;
}

const asError = (err) => ({
  errorType: err?.name ?? 'Error',
  errorMessage: err?.message ?? String(err),
  trace: String(err?.stack ?? '').split('\n'),
});

process.on('message', async ({ id, event, context }) => {
  if (initError)
    return process.send({
      id,
      ok: false,
      error: { ...asError(initError), errorType: `Runtime.${initError.name ?? 'Init'}Error` },
    });
  const deadline = Date.now() + context.timeoutMs;
  process.env._X_AMZN_TRACE_ID = context.traceId;
  const ctx = {
    ...context,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    if (handler[STREAMING] === 'response') {
      // The response stream: each write goes to the caller as it comes (in order, over IPC).
      const stream = new Writable({
        write(chunk, _enc, done) {
          process.send({ id, chunk: Buffer.from(chunk).toString('base64') }, () => done());
        },
      });
      stream.setContentType = (type) => process.send({ id, contentType: type });
      const ended = new Promise((resolve) => stream.once('finish', resolve));
      await handler(event, stream, ctx);
      // The runtime ends the stream when the handler's promise settles, if the handler did not.
      if (!stream.writableEnded) stream.end();
      await ended;
      return process.send({ id, ok: true, result: null });
    }
    const result = await handler(event, ctx);
    process.send({ id, ok: true, result: result === undefined ? null : result });
  } catch (err) {
    console.error(JSON.stringify({ level: 'ERROR', message: 'Invoke Error', ...asError(err) }));
    process.send({ id, ok: false, error: asError(err) });
  }
});
// The tier is gone (or crashed): so is this environment.
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
