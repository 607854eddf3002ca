import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { wildcard } from '#test/tier/iam.ts';
import { nodeBinary } from '#test/helpers/node-runtimes.ts';
import { ofType, REGION, type FunctionDef, type Template } from '#test/tier/template.ts';

/** Lambda's Node: `nodejs24.x` runs the bundles. */
const NODE_24 = nodeBinary(24);

/**
 * The Lambda service, locally: each function of the template runs in Node processes of its own
 * (test/tier/lambda-runner.mjs) loading its bundle from cdk.out, with the template's environment,
 * Lambda's reserved variables, credentials naming its role and `AWS_ENDPOINT_URL_*` pointing at
 * the fakes, and nothing else of this process's environment. Like Lambda, a process serves one
 * invocation at a time, a busy function gets another process, and a function that exceeds its
 * timeout is killed. Invocations by AWS services are checked against the function's resource
 * policy (AWS::Lambda::Permission): a missing permission fails like it would on AWS.
 */

export interface InvokeResult {
  ok: boolean;
  result?: unknown;
  error?: { errorType: string; errorMessage: string };
}

/** Where a response-streaming invocation's output goes (a function URL in RESPONSE_STREAM mode). */
export interface ResponseStreamSink {
  contentType(type: string): void;
  write(chunk: Buffer): void;
}

interface Instance {
  child: ChildProcess;
  ready: Promise<void>;
  busy: boolean;
}

const RUNNER = fileURLToPath(new URL('./lambda-runner.mjs', import.meta.url));
/** How much of a function's output is kept for failure messages. */
const LOG_TAIL = 20_000;

export class LambdaService {
  private readonly byArn = new Map<string, FunctionDef>();
  private readonly pools = new Map<string, Instance[]>();
  private readonly logs = new Map<string, string>();
  /**
   * The embedded-metric-format documents the functions wrote (a stdout line whose `_aws` holds
   * `CloudWatchMetrics`): what CloudWatch's log pipeline would turn into metrics, by function name.
   */
  readonly metrics: { fn: string; doc: Record<string, any> }[] = [];
  private readonly permissions: { fn: string; principal: string; sourceArn?: string; action: string }[];
  /** Once closed, nothing starts again (a sandbox stopped at shutdown still sends its STOPPED event). */
  private closed = false;

  constructor(
    readonly functions: FunctionDef[],
    resolved: Template,
    private readonly options: { endpoints: Record<string, string>; accessKeyFor: (roleArn: string) => string },
  ) {
    for (const f of functions) this.byArn.set(f.arn, f);
    this.permissions = ofType(resolved, 'AWS::Lambda::Permission').map(([, r]) => ({
      fn: r.Properties.FunctionName,
      principal: r.Properties.Principal,
      sourceArn: r.Properties.SourceArn,
      action: r.Properties.Action,
    }));
  }

  byName(name: string): FunctionDef {
    const f = this.functions.find((x) => x.name === name);
    if (!f) throw new Error(`No function ${name} in the template`);
    return f;
  }

  /** The function's output so far (its logs), for failure messages. */
  logsOf(arn: string): string {
    return this.logs.get(arn) ?? '';
  }

  /** Whether the function's resource policy lets `principal` (a service) do `action` on it from `sourceArn`. */
  mayInvoke(arn: string, principal: string, sourceArn: string, action = 'lambda:InvokeFunction'): boolean {
    return this.permissions.some(
      (p) =>
        (p.fn === arn || p.fn === arn.split(':').pop()) &&
        wildcard(p.action, action, true) &&
        p.principal === principal &&
        (!p.sourceArn || wildcard(p.sourceArn, sourceArn)),
    );
  }

  /** Invokes as a service would: denied (an error result) without a matching permission. */
  async invokeAs(principal: string, sourceArn: string, arn: string, event: unknown): Promise<InvokeResult> {
    if (!this.mayInvoke(arn, principal, sourceArn)) {
      return {
        ok: false,
        error: {
          errorType: 'AccessDeniedException',
          errorMessage: `${principal} may not invoke ${arn} from ${sourceArn} (no AWS::Lambda::Permission)`,
        },
      };
    }
    return this.invoke(arn, event);
  }

  /**
   * Runs one invocation of the function. A response-streaming handler's writes go to `stream` as they
   * come (its content type first, as the runtime sets it), before the invocation's result.
   */
  async invoke(arn: string, event: unknown, stream?: ResponseStreamSink): Promise<InvokeResult> {
    const fn = this.byArn.get(arn);
    if (!fn)
      return {
        ok: false,
        error: { errorType: 'ResourceNotFoundException', errorMessage: `Function not found: ${arn}` },
      };
    if (this.closed)
      return { ok: false, error: { errorType: 'ServiceUnavailable', errorMessage: 'The tier is shutting down' } };
    const instance = this.idle(fn);
    instance.busy = true;
    try {
      await instance.ready;
      return await this.run(fn, instance, event, stream);
    } finally {
      instance.busy = false;
    }
  }

  private idle(fn: FunctionDef): Instance {
    const pool = this.pools.get(fn.arn) ?? [];
    this.pools.set(fn.arn, pool);
    const free = pool.find((i) => !i.busy && i.child.exitCode === null && i.child.signalCode === null);
    if (free) return free;
    const instance = this.spawn(fn);
    pool.push(instance);
    return instance;
  }

  private spawn(fn: FunctionDef): Instance {
    const env: Record<string, string> = {
      ...fn.environment,
      // Lambda's reserved variables (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
      AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.functionName}`,
      AWS_LAMBDA_LOG_STREAM_NAME: `tier/[$LATEST]${randomUUID().replace(/-/g, '')}`,
      AWS_ACCESS_KEY_ID: this.options.accessKeyFor(fn.roleArn),
      AWS_SECRET_ACCESS_KEY: 'tier-secret',
      AWS_SESSION_TOKEN: 'tier-session',
      LAMBDA_TASK_ROOT: fn.bundleDir,
      LAMBDA_RUNTIME_DIR: '/var/runtime',
      _HANDLER: fn.handler,
      TZ: ':UTC',
      LANG: 'en_US.UTF-8',
      PATH: '/usr/local/bin:/usr/bin/:/bin',
      ...this.options.endpoints,
    };
    const child = fork(RUNNER, [], {
      cwd: fn.bundleDir,
      env,
      // Lambda's Node (the template's runtime is checked against it in test/infra/node-runtimes.test.ts).
      execPath: NODE_24,
      execArgv: ['--no-warnings'],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const keep = (chunk: Buffer) =>
      this.logs.set(fn.arn, (this.logsOf(fn.arn) + chunk.toString('utf8')).slice(-LOG_TAIL));
    child.stdout!.on('data', keep);
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('"_aws"')) continue;
        const doc = JSON.parse(line);
        if (Array.isArray(doc._aws?.CloudWatchMetrics)) this.metrics.push({ fn: fn.name, doc });
      }
    });
    child.stderr!.on('data', keep);
    const ready = new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`Runtime exited during init (code ${code})`)));
    });
    ready.catch(() => undefined);
    return { child, ready, busy: false };
  }

  private run(fn: FunctionDef, instance: Instance, event: unknown, stream?: ResponseStreamSink): Promise<InvokeResult> {
    const id = randomUUID();
    const context = {
      awsRequestId: id,
      functionName: fn.functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: fn.arn,
      memoryLimitInMB: String(fn.memoryMb),
      logGroupName: `/aws/lambda/${fn.functionName}`,
      logStreamName: 'tier',
      timeoutMs: fn.timeoutSeconds * 1000,
      traceId: `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${id.replace(/-/g, '').slice(0, 24)};Sampled=0`,
    };
    return new Promise<InvokeResult>((resolve) => {
      const { child } = instance;
      const done = (r: InvokeResult) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(r);
      };
      const onMessage = (m: {
        id?: string;
        ok: boolean;
        result?: unknown;
        error?: InvokeResult['error'];
        chunk?: string;
        contentType?: string;
      }) => {
        if (m.id !== id) return;
        if (m.contentType !== undefined) return stream?.contentType(m.contentType);
        if (m.chunk !== undefined) return stream?.write(Buffer.from(m.chunk, 'base64'));
        done({ ok: m.ok, result: m.result, error: m.error });
      };
      const onExit = (code: number | null, signal: string | null) =>
        done({
          ok: false,
          error: {
            errorType: 'Runtime.ExitError',
            errorMessage: `RequestId: ${id} Error: Runtime exited with ${signal ?? `code ${code}`}`,
          },
        });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        done({
          ok: false,
          error: {
            errorType: 'Sandbox.Timedout',
            errorMessage: `Task timed out after ${fn.timeoutSeconds}.00 seconds`,
          },
        });
      }, context.timeoutMs);
      child.on('message', onMessage);
      child.once('exit', onExit);
      // The runtime may have exited since it was picked (a crash, a time-out's kill): that is this invocation's failure, not the tier's.
      child.send({ id, event, context }, (err) => {
        if (err)
          done({
            ok: false,
            error: {
              errorType: 'Runtime.ExitError',
              errorMessage: `RequestId: ${id} Error: Runtime exited (${err.message})`,
            },
          });
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.pools.values()].flat();
    await Promise.all(
      all.map(
        (i) =>
          new Promise<void>((resolve) => {
            if (i.child.exitCode !== null || i.child.signalCode !== null) return resolve();
            i.child.once('exit', () => resolve());
            i.child.kill('SIGKILL');
          }),
      ),
    );
    this.pools.clear();
  }
}
