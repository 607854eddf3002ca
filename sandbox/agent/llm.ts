import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { Metrics } from '#sandbox/agent/events.ts';

export interface LlmConfig {
  /** `llm_model` of the settings, e.g. `openai/gpt-4o`, `anthropic/claude-sonnet-4-5`, or any name with a base URL */
  model: string;
  apiKey: string | null;
  /** `llm_base_url`: when set, the model is reached through this OpenAI-compatible endpoint */
  baseUrl?: string | null;
  /** Per-million-token prices that override the table (e.g. for a self-hosted or new model). */
  pricing?: ModelPrice | null;
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
  if (baseUrl) {
    const prefix = PROXY_PREFIXES.find((p) => model.startsWith(p));
    const provider = createOpenAICompatible({
      name: 'openai-compatible',
      baseURL: baseUrl,
      apiKey: apiKey || undefined,
      includeUsage: true,
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

export function priceFor(config: LlmConfig): { price: ModelPrice; source: Metrics['price_source'] } {
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
  readonly #value: Metrics;

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
  restore(saved: Pick<Metrics, 'accumulated_cost' | 'prompt_tokens' | 'completion_tokens' | 'llm_calls'>): void {
    this.#value.accumulated_cost = saved.accumulated_cost;
    this.#value.prompt_tokens = saved.prompt_tokens;
    this.#value.completion_tokens = saved.completion_tokens;
    this.#value.llm_calls = saved.llm_calls;
  }

  get cost(): number {
    return this.#value.accumulated_cost;
  }

  snapshot(): Metrics {
    return { ...this.#value };
  }
}
