import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { AuthzRequest, Decision, Statement } from '#test/tier/iam.ts';
import { ACCOUNT } from '#test/tier/template.ts';

/**
 * Every decision of the tier's own IAM evaluator (test/tier/iam.ts `evaluate`) asked again of
 * `@cloud-copilot/iam-simulate`, which knows AWS's authorization data (each action's resource types and
 * condition keys, from the Service Authorization Reference) and evaluates identity policies its own way.
 * A different answer, or a request the library refuses as malformed for its action (a resource of the
 * wrong type, a condition key of the wrong type), is a finding: `TierStack.stop` fails the file on one,
 * so every tier run checks every decision it made. Where the two differ, AWS's documentation decides
 * (test/tier/iam.test.ts cites the page) and ours is made to match.
 *
 * Cost: one simulation per distinct question (policy, action, resource, context); a tier file asks a few
 * hundred, a few milliseconds each, off the request path (judged in the background, awaited at `stop`).
 */

export interface Finding {
  request: AuthzRequest;
  ours: boolean;
  /** The library's result (`Allowed`, `ImplicitlyDenied`, `ExplicitlyDenied`), or its error. */
  theirs: string;
  /** Context keys the library says do not apply to the action (ignored by it, and by AWS). */
  ignoredContextKeys?: string[];
}

/** The principal the simulations run as: a role of the tier's account (only the identity policies matter). */
const PRINCIPAL = `arn:aws:iam::${ACCOUNT}:role/tier-function-role`;

/** The account a resource is in: the ARN's, or (S3 names no account, `*` none) the tier's own. */
const accountOf = (resource: string) => resource.split(':')[4] || ACCOUNT;

/**
 * The resource policies AWS would also evaluate, by resource ARN: each KMS key's key policy. A KMS key is
 * used only if its key policy allows it, by itself or by delegating to the account's IAM policies (AWS:
 * https://docs.aws.amazon.com/kms/latest/developerguide/key-policies.html, "Unless the key policy explicitly
 * allows it, you cannot use IAM policies to allow access to a KMS key"). The tier's evaluator reads identity
 * policies only; here the template's key policy is part of every KMS question, so a key policy that stops
 * delegating to IAM fails the tier.
 */
const resourcePolicies = new Map<string, unknown>();

/** The template's KMS key policies, by key ARN (startTier calls it with the resolved template). */
export function useKeyPolicies(keys: { arn: string; policy: unknown }[]): void {
  for (const k of keys) resourcePolicies.set(k.arn, k.policy);
}

const ids = new WeakMap<readonly Statement[], number>();
let nextId = 0;
const judged = new Map<string, Promise<void>>();
const findings: Finding[] = [];

/** Asks the library the question `evaluate` just answered; the same question is asked once per policy. */
export function crossCheck(statements: readonly Statement[], request: AuthzRequest, ours: Decision): void {
  const id = ids.get(statements) ?? nextId++;
  ids.set(statements, id);
  const key = `${id}\n${request.action}\n${request.resource}\n${JSON.stringify(request.context ?? {})}`;
  if (judged.has(key)) return;
  judged.set(
    key,
    simulate(statements, request).then(
      (theirs) => {
        const agree =
          theirs.result ===
          (ours.allowed ? 'Allowed' : ours.reason.startsWith('explicitly') ? 'ExplicitlyDenied' : 'ImplicitlyDenied');
        if (!agree || theirs.ignoredContextKeys?.length)
          findings.push({
            request,
            ours: ours.allowed,
            theirs: theirs.result,
            ...(theirs.ignoredContextKeys?.length ? { ignoredContextKeys: theirs.ignoredContextKeys } : {}),
          });
      },
      (err: unknown) => void findings.push({ request, ours: ours.allowed, theirs: `error: ${(err as Error).message}` }),
    ),
  );
}

/**
 * Condition keys whose name ends in a variable after a colon, e.g. `kms:EncryptionContext:owner` (AWS:
 * https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-encryption-context
 * lists `kms:EncryptionContext:context-key` for Encrypt and Decrypt). iam-simulate 0.1.173 matches a
 * variable only after a slash (`aws:RequestTag/<key>`), so it drops these from the request: not reported
 * as keys that do not apply. No grant of the stack conditions on one; one that did would be judged
 * without it by the library and show as a difference (test/tier/iam.test.ts shows the gap).
 */
const COLON_VARIABLE_KEYS = /^kms:EncryptionContext:/i;

/** The library's answer for one request against one principal's identity statements. */
export async function simulate(
  statements: readonly Statement[],
  request: AuthzRequest,
): Promise<{ result: string; ignoredContextKeys?: string[] }> {
  const simulation = {
    request: {
      principal: PRINCIPAL,
      action: request.action,
      resource: { resource: request.resource, accountId: accountOf(request.resource) },
      contextVariables: request.context ?? {},
    },
    identityPolicies: [{ name: 'role', policy: { Version: '2012-10-17', Statement: statements } }],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(resourcePolicies.has(request.resource) ? { resourcePolicy: resourcePolicies.get(request.resource) } : {}),
  };
  const out = await runSimulation(simulation, {});
  if (out.resultType === 'error') return { result: `error: ${out.errors.message}` };
  // A resource `*` (ListTables, ListTasks) is judged once per resource type the action takes.
  const ignored =
    out.resultType === 'single'
      ? (out.result.ignoredContextKeys ?? [])
      : [...new Set(out.results.flatMap((r) => r.ignoredContextKeys ?? []))];
  const known = ignored.filter((k) => !COLON_VARIABLE_KEYS.test(k));
  const result = out.overallResult;
  return { result, ...(known.length ? { ignoredContextKeys: known } : {}) };
}

/** Waits for every queued question; returns the findings so far and forgets them (each is reported once). */
export async function crossCheckFindings(): Promise<Finding[]> {
  let size: number;
  do {
    size = judged.size;
    await Promise.all(judged.values());
  } while (judged.size !== size);
  return findings.splice(0);
}

/** Findings in words, one a line. */
export const describeFindings = (list: Finding[]) =>
  list
    .map(
      (f) =>
        `${f.request.action} on ${f.request.resource} ${JSON.stringify(f.request.context ?? {})}: ours ${f.ours ? 'allowed' : 'denied'}, iam-simulate ${f.theirs}${f.ignoredContextKeys ? `; keys that do not apply to the action: ${f.ignoredContextKeys.join(', ')}` : ''}`,
    )
    .join('\n');
