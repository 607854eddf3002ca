import { type LlmTokens, llmCharge, llmReservation } from '#shared/llm/cost.ts';
import type { LlmClaims, LlmCredentials } from '#shared/llm/credential.ts';
import type { IdempotentCall, LlmLedger, LlmRecord, Reservation } from '#shared/llm/ledger.ts';
import { modelsHash, type PlatformModel } from '#shared/llm/platform-models.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';
import {
  AnswerRecorder,
  LLM_IDEMPOTENCY_KEEP_SECONDS,
  LLM_REPLAY_MAX_BYTES,
  openAnswer,
  requestHash,
  sealAnswer,
} from '#shared/llm/replay.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import { IDEMPOTENCY_HEADER, REPLAYED_HEADER, RETRY_AFTER_SECONDS } from '#shared/http/idempotency-key.ts';
import { logger } from '#shared/logging.ts';
import type { Plan, Plans } from '#shared/plans/model.ts';
import type { UsageAlerts } from '#shared/usage/alerts.ts';
import { aroundWrite, type StandingInput, standingOf } from '#shared/usage/standing.ts';

/*
 * The LLM gateway: the agent in a sandbox calls it with its conversation's `acsl.` credential; it
 * checks the credential (and that nothing revoked it), the plan, the rate, the budgets (a reservation
 * of the most the call can cost), forwards to the upstream with the platform's key, streams the answer
 * back as it comes, and meters the upstream's own usage into the ledger. Runtime-agnostic: the local
 * gateway and the AWS streaming function each adapt their request and response to it.
 * Prompts and completions are never logged: a call logs model, tokens, cost, latency and request id.
 */

export type LlmApi = 'openai' | 'anthropic';

/** The gateway's paths (on the local gateway's port; on AWS under the public URL) and the API each speaks. */
export const llmGatewayPaths: Record<string, LlmApi> = {
  '/llm/v1/chat/completions': 'openai',
  '/llm/v1/messages': 'anthropic',
};

/** A request over Lambda's 6 MB payload cannot reach the function: refused here alike (413). */
export const LLM_MAX_REQUEST_BYTES = 6 * 1024 * 1024;
/**
 * How long a reservation is held before it is taken for leaked (the gateway died between reserve and
 * settle) and released by the next call it stands in the way of: longer than the gateway function's
 * 15-minute time-out on AWS, with a margin. A call that outlives it locally is still charged exactly.
 */
export const RESERVATION_SECONDS = 20 * 60;
/** While the upstream has not answered a stream, an SSE comment this often (CloudFront's origin read timeout is 60 s). */
export const KEEPALIVE_MS = 15_000;

export interface GatewayRequest {
  path: string;
  /** Lower-case names. */
  headers: Record<string, string | undefined>;
  body: Buffer;
  requestId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Where the answer goes, as it comes (no buffering): a Node response locally, Lambda's response stream on AWS. */
export interface GatewaySink {
  head(status: number, headers: Record<string, string>): void;
  write(chunk: Uint8Array | string): void;
  end(): void;
}

type TrackedSink = GatewaySink & { readonly begun: boolean };

export interface GatewayLookup {
  /** The conversation's key version if `userId` owns it (undefined: gone). */
  conversationVersion(userId: string, conversationId: string): Promise<number | undefined>;
  sandbox(sandboxId: string): Promise<{ status: string; generation: number } | undefined>;
  /** The conversation owner's account status (undefined: no user record). */
  user(userId: string): Promise<{ status: string } | undefined>;
  /** The organization's plan and status (undefined: a user without an organization record: the default plan). */
  org(orgId: string): Promise<{ plan?: string; status: string } | undefined>;
  /**
   * What the organization's standing on `day` is computed from (shared/usage/standing.ts): its month's
   * day totals (compute, which the spend limit counts beside LLM spend), and on a prepaid plan its credits.
   */
  standing(orgId: string, day: string, prepaid: boolean): Promise<StandingInput>;
}

export interface GatewayDeps {
  credentials: LlmCredentials;
  policy: PlatformLlmPolicy;
  plans: () => Plans;
  key: (model: string) => Promise<string>;
  ledger: LlmLedger;
  /** Seals the answers kept for an Idempotency-Key (shared/llm/replay.ts). */
  sealer: () => Sealer;
  lookup: GatewayLookup;
  /** 80% / 100% notices, where a call's record crosses a threshold. */
  alerts?: UsageAlerts;
  /** Calls in flight per organization. */
  concurrency: number;
  fetch?: typeof fetch;
  now?: () => number;
  keepAliveMs?: number;
}

/** A refusal in the provider's own error shape. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

function errorBody(api: LlmApi, r: Refusal) {
  return api === 'openai'
    ? { error: { message: r.message, type: r.type, code: r.code ?? null } }
    : { type: 'error', error: { type: r.type, message: r.message, ...(r.code ? { code: r.code } : {}) } };
}

const credentialOf = (h: GatewayRequest['headers']) => {
  const bearer = /^Bearer\s+(\S+)$/i.exec(h.authorization ?? '')?.[1];
  return h['x-session-api-key'] ?? h['x-api-key'] ?? bearer;
};

/** Usage as the upstream reported it, normalised so each token is counted once. */
interface Reported extends LlmTokens {
  /** The final figures arrived (OpenAI's usage chunk or body; Anthropic's message_delta or body). */
  complete: boolean;
}

function openAiUsage(u: any): Reported | undefined {
  if (!u || typeof u.prompt_tokens !== 'number') return undefined;
  const cached = Number(u.prompt_tokens_details?.cached_tokens ?? 0);
  return {
    input: Math.max(0, u.prompt_tokens - cached),
    output: Number(u.completion_tokens ?? 0),
    cachedInput: cached,
    cacheWriteInput: 0,
    complete: true,
  };
}

function anthropicUsage(u: any, complete: boolean, prior?: Reported): Reported | undefined {
  if (!u) return prior;
  return {
    input: Number(u.input_tokens ?? prior?.input ?? 0),
    output: Number(u.output_tokens ?? prior?.output ?? 0),
    cachedInput: Number(u.cache_read_input_tokens ?? prior?.cachedInput ?? 0),
    cacheWriteInput: Number(u.cache_creation_input_tokens ?? prior?.cacheWriteInput ?? 0),
    complete,
  };
}

/** Reads server-sent events as they pass through, for usage and the text streamed (a cut stream's estimate). */
class SseTap {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  reported: Reported | undefined;
  streamedChars = 0;
  finished = false;
  constructor(private readonly api: LlmApi) {}

  feed(chunk: Uint8Array): void {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    let nl = this.buffer.indexOf('\n');
    while (nl >= 0) {
      this.line(this.buffer.slice(0, nl).replace(/\r$/, ''));
      this.buffer = this.buffer.slice(nl + 1);
      nl = this.buffer.indexOf('\n');
    }
  }

  private line(line: string): void {
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trim();
    if (data === '[DONE]') {
      this.finished = true;
      return;
    }
    let e: any;
    try {
      e = JSON.parse(data);
    } catch {
      return;
    }
    if (this.api === 'openai') {
      const u = openAiUsage(e.usage);
      if (u) this.reported = u;
      for (const c of e.choices ?? []) {
        this.streamedChars += String(c.delta?.content ?? '').length;
        for (const t of c.delta?.tool_calls ?? []) this.streamedChars += String(t.function?.arguments ?? '').length;
      }
      return;
    }
    if (e.type === 'message_start') this.reported = anthropicUsage(e.message?.usage, false, this.reported);
    else if (e.type === 'message_delta') this.reported = anthropicUsage(e.usage, true, this.reported);
    else if (e.type === 'message_stop') this.finished = true;
    else if (e.type === 'content_block_delta')
      this.streamedChars += String(e.delta?.text ?? e.delta?.partial_json ?? e.delta?.thinking ?? '').length;
  }
}

const month = (iso: string) => iso.slice(0, 7);

export class LlmGateway {
  private readonly fetch: typeof fetch;
  private readonly now: () => number;
  constructor(private readonly deps: GatewayDeps) {
    this.fetch = deps.fetch ?? fetch;
    this.now = deps.now ?? Date.now;
  }

  async handle(req: GatewayRequest, sink: GatewaySink): Promise<void> {
    const api = llmGatewayPaths[req.path];
    const base = { 'x-request-id': req.requestId };
    if (!api) {
      sink.head(404, { 'content-type': 'application/json', ...base });
      sink.write(JSON.stringify({ detail: 'Not Found' }));
      return sink.end();
    }
    // Whether the answer has begun: an error after that (metering) is logged, never a second head.
    let begun = false;
    const tracked: TrackedSink = {
      head: (status, headers) => {
        begun = true;
        sink.head(status, headers);
      },
      write: (c) => sink.write(c),
      end: () => sink.end(),
      get begun() {
        return begun;
      },
    };
    try {
      await this.run(api, req, tracked);
    } catch (err) {
      const refusal = err instanceof Refusal ? err : new Refusal(500, 'api_error', 'Internal error of the LLM gateway');
      if (!(err instanceof Refusal))
        logger.error('llm.gateway failed', { requestId: req.requestId, error: err as Error });
      if (begun) return;
      sink.head(refusal.status, { 'content-type': 'application/json', ...base, ...refusal.headers });
      sink.write(JSON.stringify(errorBody(api, refusal)));
      sink.end();
    }
  }

  /** The claims of a credential nothing has revoked, with the organization's current plan; 401 otherwise. */
  private async admit(req: GatewayRequest): Promise<{ claims: LlmClaims; plan: string | undefined }> {
    const key = credentialOf(req.headers);
    const unauthorized = (why: string) =>
      new Refusal(401, 'authentication_error', `Invalid gateway credential: ${why}`, 'invalid_api_key');
    if (!key) throw unauthorized('none given (Authorization: Bearer, X-Session-API-Key or x-api-key)');
    const claims = await this.deps.credentials.verify(key);
    if (!claims) throw unauthorized('malformed, forged or expired');
    // Read side by side at every call: a suspension refuses at once, before its sandboxes are paused.
    const [version, sandbox, user, org] = await Promise.all([
      this.deps.lookup.conversationVersion(claims.u, claims.c),
      this.deps.lookup.sandbox(claims.s),
      this.deps.lookup.user(claims.u),
      this.deps.lookup.org(claims.o),
    ]);
    if (version !== claims.v) throw unauthorized('revoked (the conversation was deleted or its keys revoked)');
    if (user && user.status !== 'active') throw unauthorized('revoked (the account is suspended)');
    if (sandbox?.status !== 'RUNNING' || sandbox.generation !== claims.g)
      throw unauthorized('revoked (the sandbox was paused or stopped)');
    if (org && org.status !== 'active') throw unauthorized('revoked (the organization is suspended)');
    if (modelsHash(this.deps.policy.allowed(org?.plan)) !== claims.m)
      throw unauthorized("revoked (the organization's plan changed)");
    return { claims, plan: org?.plan };
  }

  private parse(api: LlmApi, req: GatewayRequest, plan: string | undefined) {
    if (req.body.length > LLM_MAX_REQUEST_BYTES)
      throw new Refusal(
        413,
        'request_too_large',
        `The request is ${req.body.length} bytes; the gateway takes at most ${LLM_MAX_REQUEST_BYTES}`,
      );
    let body: any;
    try {
      body = JSON.parse(req.body.toString('utf8'));
    } catch {
      throw new Refusal(400, 'invalid_request_error', 'The body must be JSON');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body) || typeof body.model !== 'string')
      throw new Refusal(400, 'invalid_request_error', 'model: a platform model name is required', 'model');
    const model = this.deps.policy.get(body.model);
    if (!model)
      throw new Refusal(404, 'not_found_error', `model: ${body.model} is not a platform model`, 'model_not_found');
    if (!this.deps.policy.allowed(plan).includes(model.model))
      throw new Refusal(
        403,
        'permission_error',
        `The model ${model.model} is not in your organization's plan`,
        'model_not_in_plan',
      );
    if (model.provider !== api)
      throw new Refusal(
        400,
        'invalid_request_error',
        `model: ${model.model} is served at ${api === 'openai' ? '/llm/v1/messages' : '/llm/v1/chat/completions'}`,
        'model',
      );
    const asked = api === 'openai' ? (body.max_completion_tokens ?? body.max_tokens) : body.max_tokens;
    if (asked !== undefined && (!Number.isInteger(asked) || asked < 1))
      throw new Refusal(400, 'invalid_request_error', 'max_tokens must be a positive integer', 'max_tokens');
    // Capped at the model's limit: the reservation is then an upper bound of the call's cost.
    const maxTokens = Math.min(asked ?? model.max_output_tokens, model.max_output_tokens);
    const stream = body.stream === true;
    const upstream: any = { ...body, model: model.upstream_model };
    if (api === 'openai') {
      if ('max_completion_tokens' in body) upstream.max_completion_tokens = maxTokens;
      else upstream.max_tokens = maxTokens;
      // The upstream's own usage on every stream: what metering counts.
      if (stream) upstream.stream_options = { ...body.stream_options, include_usage: true };
    } else upstream.max_tokens = maxTokens;
    return { model, maxTokens, stream, body, upstream: JSON.stringify(upstream) };
  }

  private async run(api: LlmApi, req: GatewayRequest, sink: TrackedSink): Promise<void> {
    const started = this.now();
    const { claims, plan: planName } = await this.admit(req);
    const { model, maxTokens, stream, body, upstream } = this.parse(api, req, planName);
    const plan = this.deps.plans().plan(planName);
    const nowIso = new Date(started).toISOString();

    // Idempotency-Key (docs/platform-llms.md): claimed before the rate and the budget, so a repeat is answered
    // here (the first answer, a 409 while it runs, a 422 for another body) and never forwarded, rated or charged.
    const idem = req.headers['idempotency-key'];
    if (idem !== undefined && !/^[\x21-\x7e]{1,255}$/.test(idem))
      throw new Refusal(
        400,
        'invalid_request_error',
        `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters (e.g. a UUID)`,
        'idempotency_key',
      );
    if (idem !== undefined) {
      const hash = requestHash(req.path, body);
      const at = Math.floor(started / 1000);
      const first = await this.deps.ledger.claimIdempotencyKey(claims.c, idem, {
        requestId: req.requestId,
        requestHash: hash,
        // A claim outlives any call (the function's 15-minute time-out): older, its gateway died.
        inProgressUntil: at + RESERVATION_SECONDS,
        expiresAtEpoch: at + LLM_IDEMPOTENCY_KEEP_SECONDS,
      });
      if (first) return this.repeat(api, req, sink, claims.c, hash, first);
    }
    // Whether the claim was completed or released already; otherwise (a refusal, an error) released on the way out.
    let claimSettled = idem === undefined;
    try {
      const minute = Math.floor(started / 60_000);
      // Side by side (each is a round trip before the first token): the rate, and the month's compute spend.
      const day = nowIso.slice(0, 10);
      const [rate, standingInput] = await Promise.all([
        this.deps.ledger.takeRate(claims.o, minute, {
          requests: plan.llm_requests_per_minute,
          tokens: plan.llm_tokens_per_minute,
        }),
        this.deps.lookup.standing(claims.o, day, plan.prepaid),
      ]);
      const standing = standingOf(standingInput, day);
      const compute = standing.month.computeMicroUsd;
      if (rate)
        throw new Refusal(
          429,
          'rate_limit_error',
          `The organization's plan allows ${rate === 'llm_requests_per_minute' ? `${plan.llm_requests_per_minute} LLM requests` : `${plan.llm_tokens_per_minute} LLM tokens`} per minute`,
          rate,
          { 'retry-after': String(Math.max(1, 60 - Math.floor((started / 1000) % 60))) },
        );

      // Prepaid: a spent balance refuses at once; otherwise this month's LLM spend may grow by at most the
      // balance (the month's committed counter holds its settled calls and the reservations in flight).
      const credits = plan.prepaid ? standing.credits : undefined;
      if (credits && credits.balanceMicroUsd <= 0)
        throw new Refusal(
          402,
          'budget_exceeded',
          `The organization's prepaid credits are spent (${credits.grantedMicroUsd / 1e6} USD granted); an operator grants more`,
          'credits_exhausted',
        );
      const monthMax = Math.round(plan.monthly_spend_usd * 1_000_000) - compute;
      const creditMax = credits ? standing.month.llmMicroUsd + credits.balanceMicroUsd : Number.POSITIVE_INFINITY;
      const inputEstimate = Math.ceil(req.body.length / 3);
      const conversationMax = claims.b === undefined || claims.b === null ? null : claims.b;
      const reservation: Reservation = {
        requestId: req.requestId,
        orgId: claims.o,
        month: month(nowIso),
        conversationId: claims.c,
        microUsd: llmReservation(inputEstimate, maxTokens, model),
        conversationBudget: conversationMax !== null,
        expiresAtEpoch: Math.floor(started / 1000) + RESERVATION_SECONDS,
      };
      const refused = await this.deps.ledger.reserve(reservation, {
        orgMaxMicroUsd: Math.min(monthMax, creditMax),
        concurrency: this.deps.concurrency,
        conversationMaxMicroUsd: conversationMax,
      });
      if (refused?.refused === 'concurrency')
        throw new Refusal(
          429,
          'rate_limit_error',
          `The organization already has ${refused.used} LLM calls in flight (at most ${this.deps.concurrency})`,
          'llm_concurrent_calls',
          { 'retry-after': '1' },
        );
      if (refused)
        throw new Refusal(
          402,
          'budget_exceeded',
          refused.refused === 'monthly_spend_usd'
            ? creditMax < monthMax
              ? `The organization's prepaid credits have ${credits!.balanceMicroUsd / 1e6} USD left; this call could cost up to ${reservation.microUsd / 1e6} USD`
              : `The organization's plan allows ${plan.monthly_spend_usd} USD per month; this call could cost up to ${reservation.microUsd / 1e6} USD more than is left`
            : `The conversation's budget (max_budget_per_task, ${claims.b! / 1e6} USD) is spent; this call could cost up to ${reservation.microUsd / 1e6} USD`,
          refused.refused === 'monthly_spend_usd' && creditMax < monthMax ? 'credits_exhausted' : refused.refused,
        );

      const recorder = idem === undefined ? undefined : new AnswerRecorder();
      const out: GatewaySink = recorder
        ? {
            head: (status, headers) => {
              recorder.head(status, headers);
              sink.head(status, headers);
            },
            write: (c) => {
              recorder.write(c);
              sink.write(c);
            },
            end: () => sink.end(),
          }
        : sink;
      let outcome: { reported?: Reported; estimatedChars?: number; status: number } = { status: 0 };
      try {
        outcome = await this.forward(api, req, out, model, upstream, stream);
      } finally {
        try {
          await this.meter(req, claims, model, reservation, outcome, started, minute, { plan, standingInput });
        } finally {
          // Kept before the answer ends: a client that saw the end and repeats gets this answer back.
          if (recorder && idem !== undefined) {
            claimSettled = true;
            await this.keep(claims.c, idem, req.requestId, recorder, outcome);
          }
          // The answer ends once the call is metered: a client that saw the end sees its charge and its tokens counted.
          if (!sink.begun) sink.head(499, { 'x-request-id': req.requestId });
          sink.end();
        }
      }
    } finally {
      if (!claimSettled) await this.release(claims.c, idem!, req.requestId);
    }
  }

  /** A repeat of a claimed Idempotency-Key: the first answer, or why not. Nothing is forwarded, rated or charged. */
  private async repeat(
    api: LlmApi,
    req: GatewayRequest,
    sink: GatewaySink,
    conversationId: string,
    hash: string,
    first: IdempotentCall,
  ): Promise<void> {
    if (first.requestHash !== hash)
      throw new Refusal(
        422,
        'invalid_request_error',
        `${IDEMPOTENCY_HEADER}: this key was used with a different request (path or body); use a new key for a new request`,
        'idempotency_key_reused',
      );
    if (first.state === 'in_progress')
      throw new Refusal(
        409,
        'invalid_request_error',
        `A request with this ${IDEMPOTENCY_HEADER} is still in progress: retry after ${RETRY_AFTER_SECONDS} s`,
        'idempotency_key_in_progress',
        { 'retry-after': String(RETRY_AFTER_SECONDS) },
      );
    if (first.state === 'too_large' || !first.answer)
      throw new Refusal(
        409,
        'invalid_request_error',
        `The answer to the first request with this ${IDEMPOTENCY_HEADER} was over ${LLM_REPLAY_MAX_BYTES} bytes compressed and was not kept; it is not repeated or charged again (use a new key)`,
        'idempotency_answer_too_large',
      );
    const answer = await openAnswer(this.deps.sealer(), conversationId, first.answer);
    // The first answer as it was sent (its x-request-id names the call that was charged), marked replayed.
    sink.head(answer.status, { ...answer.headers, [REPLAYED_HEADER]: 'true' });
    sink.write(answer.body);
    sink.end();
    logger.info('llm.replay', { requestId: req.requestId, firstRequestId: first.requestId, api, conversationId });
  }

  /**
   * After a claimed call: a whole answer from the upstream (2xx, a stream to its end) is kept, sealed (or
   * marked too large); anything else (an upstream error, a cut stream, a client gone) releases the key, so a
   * repeat runs again. Never throws: a failure releases the key (logged).
   */
  private async keep(
    conversationId: string,
    key: string,
    requestId: string,
    recorder: AnswerRecorder,
    outcome: { estimatedChars?: number; status: number },
  ): Promise<void> {
    const whole = outcome.status >= 200 && outcome.status < 300 && outcome.estimatedChars === undefined;
    if (!whole) return this.release(conversationId, key, requestId);
    try {
      const answer = recorder.answer();
      const sealed = answer && (await sealAnswer(this.deps.sealer(), conversationId, answer));
      await this.deps.ledger.completeIdempotencyKey(conversationId, key, requestId, sealed ?? 'too_large');
    } catch (err) {
      logger.error('llm.idempotency-key not kept', { requestId, error: err as Error });
      await this.release(conversationId, key, requestId);
    }
  }

  private async release(conversationId: string, key: string, requestId: string): Promise<void> {
    try {
      await this.deps.ledger.releaseIdempotencyKey(conversationId, key, requestId);
    } catch (err) {
      // Left in progress: its repeats get 409 until `inProgressUntil`, then the key is free.
      logger.error('llm.idempotency-key not released', { requestId, error: err as Error });
    }
  }

  /** Forwards the call and streams the answer back; says what the upstream reported (or what was streamed). */
  private async forward(
    api: LlmApi,
    req: GatewayRequest,
    sink: GatewaySink,
    model: PlatformModel,
    body: string,
    stream: boolean,
  ): Promise<{ reported?: Reported; estimatedChars?: number; status: number }> {
    const key = await this.deps.key(model.model).catch((err: unknown) => {
      // The operator's configuration (a missing env variable, an unreadable parameter): logged, never shown.
      logger.error('llm.key unavailable', { requestId: req.requestId, model: model.model, error: err as Error });
      return undefined;
    });
    if (!key) {
      sink.head(503, { 'content-type': 'application/json', 'x-request-id': req.requestId });
      sink.write(JSON.stringify(errorBody(api, new Refusal(503, 'api_error', 'The model is not available now'))));
      return { status: 503 };
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: req.headers.accept ?? '*/*' };
    if (api === 'openai') headers.authorization = `Bearer ${key}`;
    else {
      headers['x-api-key'] = key;
      headers['anthropic-version'] = req.headers['anthropic-version'] ?? '2023-06-01';
      if (req.headers['anthropic-beta']) headers['anthropic-beta'] = req.headers['anthropic-beta'];
    }
    const url = `${model.base_url.replace(/\/+$/, '')}${api === 'openai' ? '/chat/completions' : '/messages'}`;
    const base = { 'x-request-id': req.requestId };
    // A stream whose upstream is slow to answer: headers now, SSE comments until it does (CloudFront's gaps).
    let committed = false;
    const commit = (status: number, type: string) => {
      if (committed) return;
      committed = true;
      sink.head(status, { 'content-type': type, 'cache-control': 'no-cache', ...base });
    };
    const keepAlive = stream
      ? setInterval(() => {
          commit(200, 'text/event-stream');
          sink.write(': waiting for the model\n\n');
        }, this.deps.keepAliveMs ?? KEEPALIVE_MS)
      : undefined;
    let res: Response;
    try {
      res = await this.fetch(url, { method: 'POST', headers, body, signal: req.signal });
    } catch (err) {
      clearInterval(keepAlive);
      if (req.signal.aborted) return { status: 499 };
      logger.warn('llm.upstream unreachable', {
        requestId: req.requestId,
        model: model.model,
        error: (err as Error).message,
      });
      const r = new Refusal(502, 'api_error', 'The model provider could not be reached; try again');
      if (committed) sink.write(`data: ${JSON.stringify(errorBody(api, r))}\n\n`);
      else {
        commit(502, 'application/json');
        sink.write(JSON.stringify(errorBody(api, r)));
      }
      return { status: 502 };
    }
    clearInterval(keepAlive);
    const type = res.headers.get('content-type') ?? 'application/json';
    if (!res.ok || !stream || !res.body) {
      const text = await res.text().catch(() => '');
      if (committed) {
        // Headers went out as 200 already: the upstream's error as an SSE event the SDKs surface.
        sink.write(
          `${api === 'anthropic' ? 'event: error\n' : ''}data: ${text || JSON.stringify(errorBody(api, new Refusal(res.status, 'api_error', `Upstream answered ${res.status}`)))}\n\n`,
        );
      } else {
        const extra: Record<string, string> = {};
        const retry = res.headers.get('retry-after');
        if (retry) extra['retry-after'] = retry;
        sink.head(res.status, { 'content-type': type, ...base, ...extra });
        sink.write(text);
      }
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const reported = api === 'openai' ? openAiUsage(parsed?.usage) : anthropicUsage(parsed?.usage, true);
      return { status: res.status, ...(reported ? { reported } : {}) };
    }
    commit(res.status, type);
    const tap = new SseTap(api);
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        tap.feed(value);
        sink.write(value);
      }
    } catch {
      // The upstream cut the stream, or the client went away (its abort cancels the upstream read).
    }
    const complete = tap.finished && tap.reported?.complete;
    return {
      status: res.status,
      ...(tap.reported ? { reported: tap.reported } : {}),
      ...(complete ? {} : { estimatedChars: tap.streamedChars }),
    };
  }

  private async meter(
    req: GatewayRequest,
    claims: LlmClaims,
    model: PlatformModel,
    reservation: Reservation,
    outcome: { reported?: Reported; estimatedChars?: number; status: number },
    started: number,
    minute: number,
    org: { plan: Plan; standingInput: StandingInput },
  ): Promise<void> {
    let tokens: LlmTokens | undefined;
    const r = outcome.reported;
    const cut = outcome.estimatedChars !== undefined;
    if (!cut) tokens = r;
    else if (r || outcome.estimatedChars! > 0)
      // A cut stream: what the upstream reported, the rest estimated from what was streamed (about 4 characters a token).
      tokens = {
        input: r?.input ?? Math.ceil(req.body.length / 4),
        output: Math.max(r?.output ?? 0, Math.ceil(outcome.estimatedChars! / 4)),
        cachedInput: r?.cachedInput ?? 0,
        cacheWriteInput: r?.cacheWriteInput ?? 0,
      };
    const estimated = cut && !!tokens;
    // An upstream error without usage is not charged.
    const cost = tokens ? llmCharge(tokens, model) : 0;
    try {
      if (tokens) {
        const at = new Date(this.now()).toISOString();
        const record: LlmRecord = {
          requestId: req.requestId,
          orgId: claims.o,
          userId: claims.u,
          conversationId: claims.c,
          model: model.model,
          upstreamModel: model.upstream_model,
          input: tokens.input,
          output: tokens.output,
          cachedInput: tokens.cachedInput,
          cacheWriteInput: tokens.cacheWriteInput,
          costMicroUsd: cost,
          price: { ...model.usd_per_mtok, markup: model.markup },
          estimated,
          day: at.slice(0, 10),
          at,
        };
        const orgDay = await this.deps.ledger.record(record);
        if (orgDay && this.deps.alerts) {
          // The standing around this record's ADD (the month's other days as read before the call).
          const around = aroundWrite(org.standingInput, orgDay, { llmMicroUsd: cost });
          await this.deps.alerts.check(
            claims.o,
            org.plan,
            standingOf(around.before, record.day),
            standingOf(around.after, record.day),
            record.day,
          );
        }
        await this.deps.ledger.addRateTokens(
          claims.o,
          minute,
          tokens.input + tokens.output + tokens.cachedInput + tokens.cacheWriteInput,
        );
      }
    } finally {
      await this.deps.ledger.settle(reservation, cost);
      logger.info('llm.call', {
        requestId: req.requestId,
        model: model.model,
        orgId: claims.o,
        conversationId: claims.c,
        status: outcome.status,
        // Under `usage` with the record's names: an attribute named like "...Tokens" is masked as a secret (shared/http/redact.ts).
        usage: {
          input: tokens?.input ?? 0,
          output: tokens?.output ?? 0,
          cachedInput: tokens?.cachedInput ?? 0,
          cacheWriteInput: tokens?.cacheWriteInput ?? 0,
        },
        costMicroUsd: cost,
        estimated,
        latencyMs: this.now() - started,
      });
    }
  }
}
