import { afterAll, beforeAll } from 'vitest';
import { startTestIssuer, type TestIssuer } from '#test/helpers/oidc-issuer.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/** The audience the test issuer's tokens name (`OIDC_AUDIENCE`). */
export const OPERATOR_AUDIENCE = 'acs-api';
/** The operator's email (`OPERATORS`). */
export const OPERATOR_EMAIL = 'op@example.com';

/** What an operator's call carries: no API key, the issuer's token as a bearer. */
export interface BearerAuth {
  key: null;
  headers: { authorization: string };
}
export const bearer = (token: string): BearerAuth => ({ key: null, headers: { authorization: `Bearer ${token}` } });

/** The suite's local stack with an OpenID issuer whose `op@example.com` is an operator. */
export interface OperatorStack {
  /** Set once the suite's `beforeAll` has run. */
  readonly stack: TestStack;
  readonly idp: TestIssuer;
  /** A fresh operator token. */
  operatorToken(): Promise<string>;
  /** An operator's call options (`stack.call(method, path, await operator())`). */
  operator(): Promise<BearerAuth>;
}

/**
 * The set-up the billing, Stripe and plans suites share: a test OpenID issuer, the operator allowed by
 * email, sign-up left at its default, the local stack (the sweeper off unless the options say), and
 * `process.env` restored after. `env` runs first (e.g. to start a fake the stack's environment names),
 * and what it returns is set in `process.env` before the stack starts. Call at a suite file's top level.
 */
export function useOperatorStack(
  options: Parameters<typeof startTestStack>[0] = {},
  env?: () => Promise<Record<string, string>> | Record<string, string>,
): OperatorStack {
  const saved = { ...process.env };
  let stack: TestStack | undefined;
  let idp: TestIssuer | undefined;
  const set = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`useOperatorStack: ${name} is read before the suite's beforeAll ran`);
    return value;
  };
  const operatorToken = () =>
    set(idp, 'idp').sign({ sub: 'op', aud: OPERATOR_AUDIENCE, email: OPERATOR_EMAIL, email_verified: true });
  beforeAll(async () => {
    idp = await startTestIssuer();
    process.env.OIDC_ISSUER = idp.issuer;
    process.env.OIDC_AUDIENCE = OPERATOR_AUDIENCE;
    process.env.OPERATORS = OPERATOR_EMAIL;
    delete process.env.SIGNUP_MODE;
    Object.assign(process.env, (await env?.()) ?? {});
    stack = await startTestStack({ sweepIntervalMs: 3_600_000, ...options });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await idp?.close();
    process.env = saved;
  });
  return {
    get stack() {
      return set(stack, 'stack');
    },
    get idp() {
      return set(idp, 'idp');
    },
    operatorToken,
    operator: async () => bearer(await operatorToken()),
  };
}
