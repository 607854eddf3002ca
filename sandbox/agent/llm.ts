import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, RetryError, type LanguageModel } from 'ai';
import type { AgentMetrics } from '#shared/protocol.ts';
import { fetchWithKey } from '#sandbox/agent/llm-credential.ts';

export interface LlmConfig {
  /** `llm_model` of the settings, e.g. `openai/gpt-4o`, `anthropic/claude-sonnet-4-5`, or any name with a base URL */
  model: string;
  apiKey: string | null;
  /** `llm_base_url`: when set, the model is reached through this OpenAI-compatible endpoint */
  baseUrl?: string | null;
  /** Per-million-token prices that override the table (e.g. for a self-hosted or new model). */
  pricing?: ModelPrice | null;
  /** `anthropic`: `baseUrl` speaks Anthropic's Messages API (a platform model behind the control plane's LLM gateway). */
  api?: 'anthropic';
  /** A platform model's gateway credential, renewed before it expires (sandbox/agent/llm-credential.ts). */
  renewKey?: (force?: boolean) => Promise<string>;
}

/** A configuration the agent cannot work with; the message says what to change. */
export class LlmConfigError extends Error {}

// Prefixes LiteLLM-style names carry that an OpenAI-compatible endpoint does not expect in `model`.
const PROXY_PREFIXES = ['openai/', 'litellm_proxy/'];

/**
 * The model to call for these settings:
 * - `baseUrl` set: OpenAI-compatible chat completions at that URL (API key optional, for local servers);
 * - `openai/<model>`: OpenAI; `anthropic/<model>`: Anthropic (both need the API key);
 * - anything else: an LlmConfigError, since we would not know where to send it.
 */
export function resolveModel(config: LlmConfig): LanguageModel {
  const { model, apiKey } = config;
  const baseUrl = config.baseUrl?.trim();
  if (!model.trim()) throw new LlmConfigError('llm_model is empty: set it in the settings.');
  const renewing = config.renewKey ? { fetch: fetchWithKey(config.renewKey) } : {};
  if (baseUrl && config.api === 'anthropic')
    return createAnthropic({ baseURL: baseUrl, apiKey: apiKey || undefined, ...renewing })(model);
  if (baseUrl) {
    const prefix = PROXY_PREFIXES.find((p) => model.startsWith(p));
    const provider = createOpenAICompatible({
      name: 'openai-compatible',
      baseURL: baseUrl,
      apiKey: apiKey || undefined,
      includeUsage: true,
      ...renewing,
      // Image URLs go to the endpoint as they are; the SDK would otherwise download them itself.
      supportedUrls: () => ({ 'image/*': [/^https?:\/\/.*$/i] }),
    });
    return provider.chatModel(prefix ? model.slice(prefix.length) : model);
  }
  const needKey = () => {
    if (!apiKey) throw new LlmConfigError(`llm_api_key is not set: the model ${model} needs one.`);
    return apiKey;
  };
  if (model.startsWith('openai/')) return createOpenAI({ apiKey: needKey() }).chat(model.slice('openai/'.length));
  if (model.startsWith('anthropic/')) return createAnthropic({ apiKey: needKey() })(model.slice('anthropic/'.length));
  throw new LlmConfigError(
    `The model "${model}" names no provider this agent knows: use an "openai/" or "anthropic/" prefix, or set llm_base_url to an OpenAI-compatible endpoint.`,
  );
}

/** US dollars per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
}

/**
 * List prices of common models (USD per million tokens, as published by the providers in 2025).
 * Matched by the longest key the model name (without its provider prefix) starts with, so dated
 * versions (`claude-sonnet-4-5-20250929`) find their family.
 */
export const priceTable: Readonly<Record<string, ModelPrice>> = {
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  o3: { input: 2, output: 8 },
  'o4-mini': { input: 1.1, output: 4.4 },
  'claude-sonnet-4': { input: 3, output: 15 },
  'claude-3-7-sonnet': { input: 3, output: 15 },
  'claude-opus-4': { input: 15, output: 75 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-3-5-haiku': { input: 0.8, output: 4 },
};

export function priceFor(config: LlmConfig): { price: ModelPrice; source: AgentMetrics['price_source'] } {
  if (config.pricing) return { price: config.pricing, source: 'config' };
  const name = config.model.slice(config.model.lastIndexOf('/') + 1).toLowerCase();
  const key = Object.keys(priceTable)
    .filter((k) => name.startsWith(k))
    .sort((a, b) => b.length - a.length)[0];
  return key ? { price: priceTable[key]!, source: 'table' } : { price: { input: 0, output: 0 }, source: 'unknown' };
}

/** Token usage and cost of one conversation, added to after every model call. */
export class MetricsCounter {
  readonly #price: ModelPrice;
  readonly #value: AgentMetrics;

  constructor(config: LlmConfig, maxBudgetPerTask: number | null) {
    const { price, source } = priceFor(config);
    this.#price = price;
    this.#value = {
      model: config.model,
      accumulated_cost: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      llm_calls: 0,
      max_budget_per_task: maxBudgetPerTask,
      price_source: source,
      note: source === 'unknown' ? `No price is known for ${config.model}: its cost is counted as 0.` : null,
    };
  }

  add(usage: { inputTokens?: number | undefined; outputTokens?: number | undefined }): void {
    const input = usage.inputTokens ?? 0;
    const output = usage.outputTokens ?? 0;
    this.#value.prompt_tokens += input;
    this.#value.completion_tokens += output;
    this.#value.llm_calls += 1;
    this.#value.accumulated_cost += (input * this.#price.input + output * this.#price.output) / 1_000_000;
  }

  /** Carries on from a saved snapshot (a conversation resumed in a new process). */
  restore(saved: Pick<AgentMetrics, 'accumulated_cost' | 'prompt_tokens' | 'completion_tokens' | 'llm_calls'>): void {
    this.#value.accumulated_cost = saved.accumulated_cost;
    this.#value.prompt_tokens = saved.prompt_tokens;
    this.#value.completion_tokens = saved.completion_tokens;
    this.#value.llm_calls = saved.llm_calls;
  }

  get cost(): number {
    return this.#value.accumulated_cost;
  }

  snapshot(): AgentMetrics {
    return { ...this.#value };
  }
}

// --- failures: which to retry, how long to wait, what to tell the user ---------------------------

export interface RetryPolicy {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** First back-off; doubled on each retry (default 1 s). */
  baseDelayMs: number;
  /** No wait is longer than this, a Retry-After header included (default 60 s). */
  maxDelayMs: number;
}

const RETRY_STATUSES = new Set([408, 409, 425, 429]);

/** The status of an HTTP failure from the provider, if it was one. */
export function llmStatus(err: unknown): number | undefined {
  const e = RetryError.isInstance(err) ? err.lastError : err;
  return APICallError.isInstance(e) ? e.statusCode : undefined;
}

/**
 * A refusal for money (HTTP 402): the platform's LLM gateway over the organization's spend limit, its
 * prepaid credits or the conversation's max_budget_per_task (docs/platform-llms.md), or a provider's
 * "insufficient credits". Retrying cannot help until someone raises the budget: the session pauses.
 */
export function isBudgetRefusal(err: unknown): boolean {
  return llmStatus(err) === 402;
}

/** A request too large for the model's context window (each provider words it its own way). */
export function isContextWindowError(err: unknown): boolean {
  const e = RetryError.isInstance(err) ? err.lastError : err;
  if (!APICallError.isInstance(e)) return false;
  const text = `${e.message} ${e.responseBody ?? ''}`;
  return (
    (e.statusCode === 400 || e.statusCode === 413 || e.statusCode === undefined) &&
    /context[_ ]length|context window|maximum context|too many tokens|prompt is too long|input is too long|reduce the length/i.test(
      text,
    )
  );
}

/**
 * How long to wait before trying a failed call again, or null when retrying cannot help (a 401, a
 * bad request): 429, 408, 5xx, time-outs and dropped connections are retried with exponential
 * back-off, or after the provider's `retry-after-ms` / `retry-after` (seconds or a date), capped.
 */
export function retryDelayMs(err: unknown, attempt: number, policy: RetryPolicy, timedOut: boolean): number | null {
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  if (timedOut) return backoff;
  const e = RetryError.isInstance(err) ? err.lastError : err;
  if (APICallError.isInstance(e)) {
    const status = e.statusCode;
    if (status !== undefined && !RETRY_STATUSES.has(status) && status < 500) return null;
    const headers = Object.fromEntries(Object.entries(e.responseHeaders ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    const ms = Number(headers['retry-after-ms']);
    if (headers['retry-after-ms'] && Number.isFinite(ms)) return Math.min(policy.maxDelayMs, Math.max(0, ms));
    const after = headers['retry-after'];
    if (after) {
      const seconds = Number(after);
      const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - Date.now();
      if (Number.isFinite(wait)) return Math.min(policy.maxDelayMs, Math.max(0, wait));
    }
    return backoff;
  }
  // No HTTP answer at all: a refused or dropped connection, a reset, a body cut short.
  const message = String((e as Error)?.message ?? e);
  return /fetch failed|ECONNRESET|ECONNREFUSED|socket|terminated|network|EPIPE|ETIMEDOUT|other side closed/i.test(
    message,
  )
    ? backoff
    : null;
}

/** A sentence a person can act on, from whatever the AI SDK threw. */
export function describeLlmError(err: unknown, model: string, attempts = 1): string {
  let e = err;
  let tries = attempts > 1 ? ` after ${attempts} attempts` : '';
  if (RetryError.isInstance(e)) {
    tries = ` after ${e.errors.length} attempts`;
    e = e.lastError;
  }
  if (APICallError.isInstance(e)) {
    const status = e.statusCode;
    const hint =
      status === 401 || status === 403
        ? ' Check llm_api_key.'
        : status === 402
          ? ' The budget is spent: the conversation is paused; run it again once the budget allows.'
          : status === 429
            ? ' The provider is rate-limiting or the quota is used up.'
            : status === undefined
              ? ` Check that llm_base_url (${e.url}) is reachable.`
              : '';
    return `LLM request for ${model} failed${tries}${status ? ` (HTTP ${status})` : ''}: ${e.message}.${hint}`;
  }
  return `LLM request for ${model} failed${tries}: ${(e as Error)?.message ?? String(e)}`;
}
