import { crossCheck } from '#test/tier/iam-crosscheck.ts';
import { ACCOUNT, ofType, type Template } from '#test/tier/template.ts';

/**
 * A small IAM policy evaluator: enough of AWS's logic to judge the calls our functions make, and
 * nothing more. What it does:
 * - identity policies only (AWS::IAM::Policy attached to a role, and a role's inline Policies);
 *   no resource policies, permission boundaries, SCPs or session policies (the stack has none);
 * - an explicit Deny wins, then any Allow, else the implicit deny;
 * - Action/NotAction with `*` and `?` (case-insensitive), Resource/NotResource with `*` and `?`
 *   (case-sensitive, `*` crosses `/` and `:` as in IAM);
 * - conditions: String{Equals,NotEquals,Like,NotLike,EqualsIgnoreCase}, Arn{Equals,Like,NotEquals,NotLike},
 *   Bool, Null, the `IfExists` suffix and `ForAnyValue:`/`ForAllValues:` on multi-valued keys.
 *   Several keys in a block must all hold, several values for a key are alternatives; a key the
 *   request does not carry fails the condition (unless IfExists). An operator it does not know
 *   throws, so a policy using one cannot pass by accident.
 * Policy variables (`${aws:username}`) are not supported; the stack uses none.
 */

export interface Statement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, unknown>>;
}

/** One authorization question: may the principal do `action` on `resource`, given the context keys. */
export interface AuthzRequest {
  action: string;
  resource: string;
  context?: Record<string, string | string[]>;
}

export interface Decision {
  allowed: boolean;
  /** Why, in words: the matching statement or the implicit deny. */
  reason: string;
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM wildcard match: `*` any run of characters (including none), `?` exactly one. */
export function wildcard(pattern: string, value: string, ignoreCase = false): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    ignoreCase ? 'is' : 's',
  );
  return re.test(value);
}

/** ARN matching: each of the six colon-separated parts matched on its own, as ArnLike does. */
function arnLike(pattern: string, value: string): boolean {
  const p = pattern.split(':');
  const v = value.split(':');
  if (p.length < 6 || v.length < 6) return wildcard(pattern, value);
  const head = (parts: string[]) => [...parts.slice(0, 5), parts.slice(5).join(':')];
  const [hp, hv] = [head(p), head(v)];
  return hp.every((part, i) => wildcard(part, hv[i]!));
}

type Test = (expected: string, actual: string) => boolean;
const operators: Record<string, Test> = {
  StringEquals: (e, a) => e === a,
  StringNotEquals: (e, a) => e !== a,
  StringEqualsIgnoreCase: (e, a) => e.toLowerCase() === a.toLowerCase(),
  StringLike: (e, a) => wildcard(e, a),
  StringNotLike: (e, a) => !wildcard(e, a),
  ArnEquals: (e, a) => arnLike(e, a),
  ArnLike: (e, a) => arnLike(e, a),
  ArnNotEquals: (e, a) => !arnLike(e, a),
  ArnNotLike: (e, a) => !arnLike(e, a),
  Bool: (e, a) => e.toLowerCase() === a.toLowerCase(),
};
const negated = (op: string) => /Not/.test(op);

function conditionHolds(condition: Statement['Condition'], context: Record<string, string | string[]>): boolean {
  for (const [rawOp, block] of Object.entries(condition ?? {})) {
    let op = rawOp;
    let setOp: 'any' | 'all' | undefined;
    if (op.startsWith('ForAnyValue:')) [setOp, op] = ['any', op.slice('ForAnyValue:'.length)];
    else if (op.startsWith('ForAllValues:')) [setOp, op] = ['all', op.slice('ForAllValues:'.length)];
    const ifExists = op.endsWith('IfExists');
    if (ifExists) op = op.slice(0, -'IfExists'.length);
    for (const [key, expectedRaw] of Object.entries(block)) {
      const expected = list(expectedRaw as string | string[]).map(String);
      const found = Object.entries(context).find(([k]) => k.toLowerCase() === key.toLowerCase())?.[1];
      if (op === 'Null') {
        if ((found === undefined) !== (expected[0] === 'true')) return false;
        continue;
      }
      const test = operators[op];
      if (!test) throw new Error(`The tier's IAM evaluator does not know the condition operator ${rawOp}`);
      if (found === undefined) {
        if (ifExists || setOp === 'all') continue;
        return false;
      }
      const actual = list(found);
      // A negated operator holds when no listed value matches; a positive one when any does.
      const one = (a: string) => (negated(op) ? expected.every((e) => test(e, a)) : expected.some((e) => test(e, a)));
      const ok = setOp === 'all' ? actual.every(one) : actual.some(one);
      if (!ok) return false;
    }
  }
  return true;
}

function matches(s: Statement, req: AuthzRequest): boolean {
  const actionOk =
    s.Action !== undefined
      ? list(s.Action).some((a) => wildcard(a, req.action, true))
      : !list(s.NotAction).some((a) => wildcard(a, req.action, true));
  if (!actionOk) return false;
  const resourceOk =
    s.Resource !== undefined
      ? list(s.Resource).some((r) => wildcard(r, req.resource))
      : !list(s.NotResource).some((r) => wildcard(r, req.resource));
  if (!resourceOk) return false;
  return conditionHolds(s.Condition, req.context ?? {});
}

/** AWS's decision for one request against a principal's statements. */
export function evaluate(statements: readonly Statement[], req: AuthzRequest): Decision {
  const decision = decide(statements, req);
  // Every decision is asked again of AWS's authorization data (test/tier/iam-crosscheck.ts); `stop` fails on a difference.
  crossCheck(statements, req, decision);
  return decision;
}

function decide(statements: readonly Statement[], req: AuthzRequest): Decision {
  const hits = statements.filter((s) => matches(s, req));
  const deny = hits.find((s) => s.Effect === 'Deny');
  if (deny) return { allowed: false, reason: `explicitly denied by ${JSON.stringify(deny)}` };
  const allow = hits.find((s) => s.Effect === 'Allow');
  if (allow) return { allowed: true, reason: `allowed by ${JSON.stringify(allow)}` };
  return { allowed: false, reason: 'no statement allows it (implicit deny)' };
}

/** Every role's identity statements in a resolved template, by role ARN. */
export function rolePolicies(resolved: Template): Map<string, Statement[]> {
  const byRoleName = new Map<string, Statement[]>();
  const add = (role: string, statements: unknown) =>
    byRoleName.set(role, [...(byRoleName.get(role) ?? []), ...(list(statements) as Statement[])]);
  for (const [id, r] of ofType(resolved, 'AWS::IAM::Role')) {
    byRoleName.set(id, byRoleName.get(id) ?? []);
    for (const p of r.Properties?.Policies ?? []) add(id, p.PolicyDocument.Statement);
  }
  for (const [, r] of ofType(resolved, 'AWS::IAM::Policy'))
    for (const role of r.Properties.Roles ?? []) add(role, r.Properties.PolicyDocument.Statement);
  const out = new Map<string, Statement[]>();
  // Role ARNs as template.ts names them.
  for (const [id] of ofType(resolved, 'AWS::IAM::Role'))
    out.set(`arn:aws:iam::${ACCOUNT}:role/${id}`, byRoleName.get(id) ?? []);
  return out;
}

/** The AccessDeniedException AWS answers with, in its words. */
export function deniedMessage(principal: string, req: AuthzRequest): string {
  const session = principal.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/');
  return `User: ${session}/function is not authorized to perform: ${req.action} on resource: ${req.resource} because no identity-based policy allows the ${req.action} action`;
}
