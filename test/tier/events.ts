import { randomUUID } from 'node:crypto';
import { evaluate, type Statement } from '#test/tier/iam.ts';
import type { InvokeResult, LambdaService } from '#test/tier/lambda.ts';
import { ACCOUNT, ofType, REGION, type Template } from '#test/tier/template.ts';

/**
 * EventBridge and EventBridge Scheduler as the template configures them. Events put on the default
 * bus are matched against every enabled AWS::Events::Rule's pattern and delivered to its Lambda
 * targets, which the function's resource policy must allow (principal events.amazonaws.com, the
 * rule's ARN). A schedule invokes its target with its execution role: the role must trust
 * scheduler.amazonaws.com and allow lambda:InvokeFunction on the target. Retries and dead-letter
 * queues are not emulated: every failed delivery is recorded in `failures` instead.
 */

export interface Delivery {
  source: string;
  target: string;
  event: unknown;
  result: InvokeResult;
}

/** EventBridge pattern matching for the forms our rules use: value lists, nested objects, prefix, exists, anything-but. */
export function matchesPattern(pattern: any, event: any): boolean {
  for (const [key, expected] of Object.entries(pattern)) {
    const actual = event?.[key];
    if (Array.isArray(expected)) {
      const values = Array.isArray(actual) ? actual : [actual];
      const ok = expected.some((e) => {
        if (e === null || typeof e !== 'object') return values.some((v) => v === e);
        if ('prefix' in e) return values.some((v) => typeof v === 'string' && v.startsWith(e.prefix));
        if ('exists' in e) return (actual !== undefined) === e.exists;
        if ('anything-but' in e) {
          const not = Array.isArray(e['anything-but']) ? e['anything-but'] : [e['anything-but']];
          return actual !== undefined && values.every((v) => !not.includes(v));
        }
        throw new Error(`EventBridge pattern operator ${JSON.stringify(e)} is not emulated`);
      });
      if (!ok) return false;
    } else if (expected && typeof expected === 'object') {
      if (!matchesPattern(expected, actual)) return false;
    } else throw new Error(`Invalid EventBridge pattern at ${key}`);
  }
  return true;
}

export class EventBus {
  readonly deliveries: Delivery[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private readonly rules: { arn: string; pattern: any; targets: string[] }[];
  private readonly schedules: { id: string; roleArn: string; target: string; input: unknown }[];
  /** Rules with a ScheduleExpression (EventBridge's own schedules, as opposed to Scheduler's schedules). */
  private readonly scheduledRules: { id: string; arn: string; expression: string; targets: string[] }[];

  constructor(
    private readonly resolved: Template,
    private readonly lambda: LambdaService,
    private readonly policies: Map<string, Statement[]>,
  ) {
    this.rules = ofType(resolved, 'AWS::Events::Rule')
      .filter(([, r]) => r.Properties.State !== 'DISABLED' && r.Properties.EventPattern && !r.Properties.EventBusName)
      .map(([id, r]) => ({
        arn: `arn:aws:events:${REGION}:${ACCOUNT}:rule/${id}`,
        pattern: r.Properties.EventPattern,
        targets: (r.Properties.Targets ?? []).map((t: any) => t.Arn),
      }));
    this.scheduledRules = ofType(resolved, 'AWS::Events::Rule')
      .filter(([, r]) => r.Properties.State !== 'DISABLED' && r.Properties.ScheduleExpression)
      .map(([id, r]) => ({
        id,
        arn: `arn:aws:events:${REGION}:${ACCOUNT}:rule/${id}`,
        expression: r.Properties.ScheduleExpression,
        targets: (r.Properties.Targets ?? []).map((t: any) => t.Arn),
      }));
    this.schedules = ofType(resolved, 'AWS::Scheduler::Schedule').map(([id, r]) => ({
      id,
      roleArn: r.Properties.Target.RoleArn,
      target: r.Properties.Target.Arn,
      input: r.Properties.Target.Input !== undefined ? JSON.parse(r.Properties.Target.Input) : {},
    }));
  }

  get failures(): Delivery[] {
    return this.deliveries.filter((d) => !d.result.ok);
  }

  /** PutEvents on the default bus: every matching rule delivers to its targets (asynchronously, like EventBridge). */
  put(detailType: string, source: string, detail: unknown, resources: string[] = []): void {
    const event = {
      version: '0',
      id: randomUUID(),
      'detail-type': detailType,
      source,
      account: ACCOUNT,
      time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      region: REGION,
      resources,
      detail,
    };
    for (const rule of this.rules) {
      if (!matchesPattern(rule.pattern, event)) continue;
      for (const target of rule.targets) {
        const p = this.lambda.invokeAs('events.amazonaws.com', rule.arn, target, event).then((result) => {
          this.deliveries.push({ source: rule.arn, target, event, result });
        });
        this.pending.add(p);
        void p.finally(() => this.pending.delete(p));
      }
    }
  }

  /** Waits for every delivery under way. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** The scheduled rules of the template: logical id and schedule expression (tests find theirs by what it targets). */
  get ruleSchedules(): { id: string; expression: string; targets: string[] }[] {
    return this.scheduledRules.map(({ id, expression, targets }) => ({ id, expression, targets }));
  }

  /**
   * One firing of a scheduled rule (by logical id) at `time`: a "Scheduled Event" delivered to each target as
   * EventBridge does, through the function's resource policy (principal events.amazonaws.com, the rule's ARN).
   */
  async runRule(id: string, time = new Date()): Promise<Delivery[]> {
    const rule = this.scheduledRules.find((r) => r.id === id);
    if (!rule) throw new Error(`No scheduled rule ${id}`);
    const event = {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: ACCOUNT,
      time: time.toISOString().replace(/\.\d+Z$/, 'Z'),
      region: REGION,
      resources: [rule.arn],
      detail: {},
    };
    const out: Delivery[] = [];
    for (const target of rule.targets) {
      const result = await this.lambda.invokeAs('events.amazonaws.com', rule.arn, target, event);
      const delivery = { source: rule.arn, target, event, result };
      this.deliveries.push(delivery);
      out.push(delivery);
    }
    return out;
  }

  /**
   * One run of a schedule (by logical id or its start, e.g. `SweeperSchedule`; or the only one): invoked
   * with the schedule's role, as EventBridge Scheduler does.
   */
  async runSchedule(id?: string): Promise<Delivery> {
    const s = id
      ? (this.schedules.find((x) => x.id === id) ?? only(this.schedules.filter((x) => x.id.startsWith(id))))
      : this.schedules.length === 1
        ? this.schedules[0]
        : undefined;
    if (!s) throw new Error(`No schedule ${id ?? '(the template has several or none)'}`);
    const roleId = s.roleArn.split('/').pop()!;
    const trust = this.resolved.Resources[roleId]?.Properties?.AssumeRolePolicyDocument?.Statement ?? [];
    const trusted = trust.some(
      (t: any) => t.Effect === 'Allow' && [t.Principal?.Service].flat().includes('scheduler.amazonaws.com'),
    );
    const decision = evaluate(this.policies.get(s.roleArn) ?? [], {
      action: 'lambda:InvokeFunction',
      resource: s.target,
    });
    const result: InvokeResult = !trusted
      ? {
          ok: false,
          error: {
            errorType: 'AccessDeniedException',
            errorMessage: `Role ${s.roleArn} does not trust scheduler.amazonaws.com`,
          },
        }
      : !decision.allowed
        ? {
            ok: false,
            error: {
              errorType: 'AccessDeniedException',
              errorMessage: `Role ${s.roleArn} may not invoke ${s.target}: ${decision.reason}`,
            },
          }
        : await this.lambda.invoke(s.target, s.input);
    const delivery = {
      source: `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/default/${s.id}`,
      target: s.target,
      event: s.input,
      result,
    };
    this.deliveries.push(delivery);
    return delivery;
  }
}

const only = <T>(list: T[]): T | undefined => (list.length === 1 ? list[0] : undefined);
