import {
  describeLlmError,
  isBudgetRefusal,
  isContextWindowError,
  retryDelayMs,
  type RetryPolicy,
} from '#sandbox/agent/llm.ts';

export interface LlmRetry {
  attempt: number;
  max_retries: number;
  delay_ms: number;
  reason: string;
}

export interface ResilientCallOptions<T> {
  /** The model's name, for the messages. */
  model: string;
  policy: RetryPolicy;
  /** Per attempt. */
  timeoutMs: number;
  /** Aborted by a pause (or close): the attempt under way, or the wait before the next, is abandoned. */
  pause: AbortSignal;
  /** One attempt of the call, abandoned when `signal` aborts. */
  attempt: (signal: AbortSignal) => Promise<T>;
  /** The request overflowed the model's context: shorten what it sends; false when nothing can be shortened. */
  shorten: () => Promise<boolean>;
  /** How often `shorten` may be tried for one call. */
  maxShortenings: number;
  /** Told before each wait for a retry (the session makes it an event). */
  onRetry: (retry: LlmRetry) => Promise<void>;
}

/** `budget`: the model's gateway refused the call for money (402): the conversation pauses, it does not fail. */
export type ResilientCallOutcome<T> = { result: T } | { paused: true } | { error: string; budget?: true };

/**
 * A model call that holds up: 429, 408, 5xx, time-outs and dropped connections are retried with
 * back-off (honouring Retry-After, bounded by the policy), a context overflow is shortened and tried
 * again, a pause abandons it. Past the bounds the outcome is a sentence saying why, never a throw.
 */
export async function callResiliently<T>(o: ResilientCallOptions<T>): Promise<ResilientCallOutcome<T>> {
  let shortenings = 0;
  for (let attempt = 0; ; ) {
    const timeout = AbortSignal.timeout(o.timeoutMs);
    try {
      return { result: await o.attempt(AbortSignal.any([o.pause, timeout])) };
    } catch (err) {
      if (o.pause.aborted) return { paused: true };
      if (isContextWindowError(err) && shortenings < o.maxShortenings && (await o.shorten())) {
        shortenings += 1;
        continue;
      }
      const timedOut = timeout.aborted;
      const delay = attempt < o.policy.maxRetries ? retryDelayMs(err, attempt, o.policy, timedOut) : null;
      if (delay === null) {
        if (timedOut)
          return {
            error: `The LLM did not answer within ${o.timeoutMs / 1000} s${attempt ? ` (${attempt + 1} attempts)` : ''} (model ${o.model}).`,
          };
        const why = describeLlmError(err, o.model, attempt + 1);
        if (isBudgetRefusal(err)) return { error: why, budget: true };
        return {
          error: isContextWindowError(err)
            ? `${why} The conversation is too long for the model's context window even after condensing it.`
            : why,
        };
      }
      attempt += 1;
      await o.onRetry({
        attempt,
        max_retries: o.policy.maxRetries,
        delay_ms: delay,
        reason: timedOut ? `no answer within ${o.timeoutMs / 1000} s` : describeLlmError(err, o.model),
      });
      if (!(await sleepUnlessAborted(delay, o.pause))) return { paused: true };
    }
  }
}

/** Waits `ms`; false when `signal` aborted first. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
