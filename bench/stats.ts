/** Percentile of already-collected samples (nearest-rank). */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? NaN;
}

export const ms = (n: number) => `${n.toFixed(2)} ms`;

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
