import type { PlatformModel } from '#shared/llm/platform-models.ts';
import { roundHalfEven } from '#shared/usage/prices.ts';

/** One upstream call's tokens, each counted once: `input` excludes the cached and cache-write ones. */
export interface LlmTokens {
  input: number;
  output: number;
  cachedInput: number;
  cacheWriteInput: number;
}

/** A price (USD per million tokens, a JSON number in the file) as an exact fraction n / d. */
function fraction(usd: number): { n: bigint; d: bigint } {
  const [whole, frac = ''] = usd.toFixed(12).replace(/0+$/, '').split('.');
  return { n: BigInt(whole! + frac), d: 10n ** BigInt(frac.length) };
}

/**
 * What the tokens cost at the model's prices and markup, in integer micro-USD, rounded half-even
 * once. A USD price per million tokens is a micro-USD price per token, so: sum(tokens x price) x (1 + markup).
 * Cached reads without a price of their own are charged at the input price; cache writes likewise.
 */
export function llmCharge(t: LlmTokens, model: PlatformModel): number {
  const p = model.usd_per_mtok;
  const parts: [number, number][] = [
    [t.input, p.input],
    [t.output, p.output],
    [t.cachedInput, p.cached_input ?? p.input],
    [t.cacheWriteInput, p.cache_write_input ?? p.input],
  ];
  const m = fraction(model.markup);
  let num = 0n;
  let den = 1n;
  for (const [tokens, price] of parts) {
    if (!tokens) continue;
    const f = fraction(price);
    // num/den + tokens*f.n/f.d
    num = num * f.d + BigInt(tokens) * f.n * den;
    den *= f.d;
  }
  return Number(roundHalfEven(num * (m.d + m.n), den * m.d));
}

/** The most a call can cost: the reservation made before it is forwarded (input at the higher of the input prices). */
export function llmReservation(inputTokens: number, maxOutputTokens: number, model: PlatformModel): number {
  const p = model.usd_per_mtok;
  const inputPrice = Math.max(p.input, p.cached_input ?? 0, p.cache_write_input ?? 0);
  return llmCharge(
    { input: inputTokens, output: maxOutputTokens, cachedInput: 0, cacheWriteInput: 0 },
    { ...model, usd_per_mtok: { input: inputPrice, output: p.output } },
  );
}
