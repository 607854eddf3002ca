import * as z from '#shared/zod.ts';

export interface SandboxConfig {
  /** Sandboxes without agent activity for this long are paused by the sweeper. */
  idleMinutes: number;
  /** A sandbox still STARTING after this long becomes ERROR. */
  startTimeoutSeconds: number;
  /** STARTING/RUNNING sandboxes per user; one more pauses the least recently active. */
  maxRunning: number;
  /** Longest a command long-poll waits before answering "nothing yet". */
  pollMaxSeconds: number;
  /** How often a waiting long-poll looks at the queue. */
  pollIntervalMs: number;
  /** How often the program should heartbeat (told at check-in). */
  heartbeatSeconds: number;
}

const positiveInt = (name: string, max: number) =>
  z.coerce
    .number({ error: `${name} must be a whole number` })
    .check(
      z.int(`${name} must be a whole number`),
      z.gte(1, `${name} must be at least 1`),
      z.lte(max, `${name} must be at most ${max}`),
    );

const envSchema = z.object({
  SANDBOX_IDLE_MINUTES: z.optional(positiveInt('SANDBOX_IDLE_MINUTES', 7 * 24 * 60)),
  SANDBOX_START_TIMEOUT_SECONDS: z.optional(positiveInt('SANDBOX_START_TIMEOUT_SECONDS', 3600)),
  MAX_RUNNING_SANDBOXES: z.optional(positiveInt('MAX_RUNNING_SANDBOXES', 1000)),
});

/** The defaults: 30 idle minutes, 5 running sandboxes; the start time-out and polling differ per deployment. */
export const baseSandboxConfig = { idleMinutes: 30, maxRunning: 5, heartbeatSeconds: 30 } as const;

/**
 * Reads SANDBOX_IDLE_MINUTES, SANDBOX_START_TIMEOUT_SECONDS and MAX_RUNNING_SANDBOXES over the
 * deployment's defaults, failing with the key's name on a bad value.
 */
export function sandboxConfig(
  env: Record<string, string | undefined>,
  defaults: Pick<SandboxConfig, 'startTimeoutSeconds' | 'pollMaxSeconds' | 'pollIntervalMs'> & Partial<SandboxConfig>,
): SandboxConfig {
  const parsed = envSchema.safeParse({
    SANDBOX_IDLE_MINUTES: env.SANDBOX_IDLE_MINUTES || undefined,
    SANDBOX_START_TIMEOUT_SECONDS: env.SANDBOX_START_TIMEOUT_SECONDS || undefined,
    MAX_RUNNING_SANDBOXES: env.MAX_RUNNING_SANDBOXES || undefined,
  });
  if (!parsed.success) throw new Error(`Configuration error: ${parsed.error.issues[0]!.message}`);
  const e = parsed.data;
  return {
    ...baseSandboxConfig,
    ...defaults,
    ...(e.SANDBOX_IDLE_MINUTES ? { idleMinutes: e.SANDBOX_IDLE_MINUTES } : {}),
    ...(e.SANDBOX_START_TIMEOUT_SECONDS ? { startTimeoutSeconds: e.SANDBOX_START_TIMEOUT_SECONDS } : {}),
    ...(e.MAX_RUNNING_SANDBOXES ? { maxRunning: e.MAX_RUNNING_SANDBOXES } : {}),
  };
}
