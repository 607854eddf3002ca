/** Fargate's valid memory sizes (MiB) for each CPU size (CPU units): the deployment's specs and the resource factor's products are checked against it. */
export const FARGATE_MEMORY: Record<number, { min: number; max: number; step: number }> = {
  256: { min: 512, max: 2048, step: 512 },
  512: { min: 1024, max: 4096, step: 1024 },
  1024: { min: 2048, max: 8192, step: 1024 },
  2048: { min: 4096, max: 16384, step: 1024 },
  4096: { min: 8192, max: 30720, step: 1024 },
  8192: { min: 16384, max: 61440, step: 4096 },
  16384: { min: 32768, max: 122880, step: 8192 },
};

/** Why Fargate would refuse `cpu` units with `memory` MiB, in words; undefined when it is a valid size. */
export function fargateSizeProblem(
  cpu: number,
  memory: number,
): { field: 'cpu' | 'memory'; message: string } | undefined {
  const range = FARGATE_MEMORY[cpu];
  if (!range) return { field: 'cpu', message: `Fargate cpu must be one of ${Object.keys(FARGATE_MEMORY).join(', ')}` };
  if (memory < range.min || memory > range.max || (memory - range.min) % range.step !== 0) {
    return {
      field: 'memory',
      message: `with cpu ${cpu}, Fargate memory must be ${range.min}..${range.max} in steps of ${range.step}`,
    };
  }
  return undefined;
}
