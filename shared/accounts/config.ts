/** Sign-in and sign-up settings, read from the environment (locally `npm start`'s; on AWS the stack sets them from CDK context). */

export const signupModes = ['open', 'invite', 'closed'] as const;
export type SignupMode = (typeof signupModes)[number];

/** `SIGNUP_MODE`: open (a first sign-in makes the person and a personal organization), invite, closed. */
export function signupMode(env: NodeJS.ProcessEnv = process.env): SignupMode {
  const value = env.SIGNUP_MODE?.trim() || 'open';
  if (!(signupModes as readonly string[]).includes(value))
    throw new Error(`Configuration error: SIGNUP_MODE must be one of ${signupModes.join(', ')} (got "${value}")`);
  return value as SignupMode;
}

/**
 * `OPERATORS`: comma-separated verified emails of the configured issuer, or `<issuer>|<sub>`. (On
 * AWS members of the Cognito group `operators` count too: the token's `cognito:groups`.)
 */
export function operatorEntries(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.OPERATORS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => (s.includes('|') ? s : s.toLowerCase()));
}

/** How long audit entries are kept: `AUDIT_RETENTION_DAYS` (default 365), then DynamoDB's TTL removes them. */
export function auditRetentionDays(env: NodeJS.ProcessEnv = process.env): number {
  const days = env.AUDIT_RETENTION_DAYS ? Number(env.AUDIT_RETENTION_DAYS) : 365;
  if (!Number.isInteger(days) || days < 1 || days > 3650)
    throw new Error('Configuration error: AUDIT_RETENTION_DAYS must be a whole number of days from 1 to 3650');
  return days;
}

/** The plan a new organization gets: the contracts' `default_plan`. */
export const DEFAULT_PLAN = 'free';
