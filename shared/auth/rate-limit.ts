import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';

/**
 * Fixed-window counters for the sign-in endpoints, per IP and per account, kept in the keys table
 * under `ratelimit:<scope>:<window>` (one conditional ADD per attempt; TTL removes old windows). They
 * hold across Lambda containers, unlike a counter in memory.
 */
export interface RateLimiter {
  /** Counts one attempt; false when `scope` already had `max` in this window. */
  take(scope: string, max: number, windowSeconds: number): Promise<boolean>;
}

export class DynamoRateLimiter implements RateLimiter {
  async take(scope: string, max: number, windowSeconds: number): Promise<boolean> {
    const window = Math.floor(Date.now() / 1000 / windowSeconds);
    return conditionalWrite(() =>
      documentClient().send(
        new UpdateCommand({
          TableName: tableName('keys'),
          Key: { keyId: `ratelimit:${scope}:${window}` },
          UpdateExpression: 'ADD attempts :one SET expiresAtEpoch = :exp',
          ConditionExpression: 'attribute_not_exists(attempts) OR attempts < :max',
          ExpressionAttributeValues: { ':one': 1, ':max': max, ':exp': (window + 2) * windowSeconds },
        }),
      ),
    );
  }
}

/**
 * Whole seconds until the fixed window `take` counts in ends (1 to `windowSeconds`): when an attempt
 * refused now would be counted afresh, so the `Retry-After` that tells a client no more and no less.
 */
export function secondsLeftInWindow(windowSeconds: number, nowMs = Date.now()): number {
  return windowSeconds - (Math.floor(nowMs / 1000) % windowSeconds);
}

/** The sign-in limits' window: each counts attempts in a fixed minute, and a refusal's Retry-After is what is left of it. */
export const SIGN_IN_WINDOW_SECONDS = 60;

/**
 * Sign-in attempts allowed per minute: per client IP, and per account (issuer and subject). The number
 * per IP holds each exchange for a session cookie (the OpenID exchange, and `POST /api/authenticate` in
 * the authorizer), each on a counter of its own (scopes `signin-ip:` and `authenticate-ip:`).
 */
export const SIGN_IN_PER_IP_PER_MINUTE = 20;
/** The refusal past SIGN_IN_PER_IP_PER_MINUTE (429, `Retry-After`: the seconds left in the minute's window). */
export const SIGN_IN_PER_IP_REFUSAL = 'Too many sign-in attempts from this address: wait a minute';
export const SIGN_IN_PER_ACCOUNT_PER_MINUTE = 10;
/** `sign_in_refused` audit entries written per person per minute: a flood of refusals cannot fill the log. */
export const SIGN_IN_REFUSED_AUDITS_PER_MINUTE = 1;
