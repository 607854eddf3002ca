/** Percentile of already-collected samples (nearest-rank). */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? NaN;
}

/** Milliseconds for a table cell: two decimals for request latencies, none for process-level times. */
export const ms = (n: number, digits = 2) => `${n.toFixed(digits)} ms`;

/** `p50 / p99` of the samples, for a table cell. */
export const p50p99 = (samples: number[], digits = 2) =>
  `${ms(percentile(samples, 50), digits)} / ${ms(percentile(samples, 99), digits)}`;

/** Thousands separators, so 100000 reads as 100,000. */
export const count = (n: number) => Math.round(n).toLocaleString('en-US');

/** Runs `fn` `warmup` times unmeasured, then `runs` times, returning each run's milliseconds. */
export async function sample(runs: number, fn: () => Promise<unknown>, warmup = Math.min(20, runs)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** Milliseconds `fn` took, once. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/**
 * Runs every function once per round, `runs` rounds after `warmup` unmeasured ones, returning each
 * one's milliseconds: measures taken side by side, so a change in the machine's load touches them
 * alike. The order is shuffled every round: in a fixed order a periodic cost (a garbage collection
 * every so many requests) lands on the same measures round after round, and moved a p50 by a
 * quarter in a probe of the list routes (the same request 0.85x or 1.28x its twin by its place).
 */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export async function interleaved<K extends string>(
  runs: number,
  fns: Record<K, () => Promise<unknown>>,
  warmup = Math.min(20, runs),
): Promise<Record<K, number[]>> {
  const names = Object.keys(fns) as K[];
  const out = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < warmup + runs; i++) {
    for (const name of shuffled(names)) {
      const t = performance.now();
      await fns[name]();
      if (i >= warmup) out[name].push(performance.now() - t);
    }
  }
  return out;
}
