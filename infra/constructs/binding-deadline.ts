import { Lazy, Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

/**
 * The warm pool's binding deadline (docs/architecture.md, "The warm pool"): each claim starts an
 * execution (shared/wiring/aws/pool-deadline.ts) that waits `seconds`, then invokes the sweeper with the
 * claim, which starts the sandbox cold if its standby has not acknowledged the binding by then. No
 * function waits (principle 8): a Standard workflow's Wait is billed per state transition, not by time
 * (about 3 transitions, $0.000075 a claim), and nothing of it runs or costs while no one starts.
 *
 * The sweeper is given after it exists (`invokes`): the starting routes need this ARN first, and the
 * sweeper does not start executions (its own retried claims are found by its next sweep), so there is
 * no cycle.
 */
export class BindingDeadline extends Construct {
  readonly stateMachine: CfnStateMachine;
  readonly role: Role;
  private target?: IFunction;

  constructor(scope: Construct, id: string, props: { seconds: number }) {
    super(scope, id);
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('states.amazonaws.com'),
      description: "Warm pool binding deadline: invokes the sweeper with a claim once the claim's time is up",
    });
    const definition = Lazy.string({
      produce: () => {
        if (!this.target) throw new Error('BindingDeadline: invokes(sweeper) was never called');
        return Stack.of(this).toJsonString({
          Comment: 'A claimed standby has this long to acknowledge its binding; then the sweeper looks at the claim.',
          StartAt: 'Wait',
          States: {
            Wait: { Type: 'Wait', Seconds: props.seconds, Next: 'Sweeper' },
            Sweeper: {
              Type: 'Task',
              Resource: this.target.functionArn,
              // The sweeper's check is idempotent: a retry after a Lambda error does no harm.
              Retry: [{ ErrorEquals: ['States.ALL'], IntervalSeconds: 2, MaxAttempts: 2, BackoffRate: 2 }],
              End: true,
            },
          },
        });
      },
    });
    this.stateMachine = new CfnStateMachine(this, 'StateMachine', {
      stateMachineType: 'STANDARD',
      roleArn: this.role.roleArn,
      definitionString: definition,
    });
    const reason =
      "Each execution is a 10 s Wait and one invoke of the sweeper, whose own log line (pool.binding-timeout) and the sandbox's record say what it did; execution logs and traces would bill per claim for nothing more.";
    for (const rule of ['AwsSolutions-SF1', 'AwsSolutions-SF2', 'Serverless-StepFunctionStateMachineXray'])
      Validations.of(this.stateMachine).acknowledge({ id: rule, reason });
  }

  get arn(): string {
    return this.stateMachine.attrArn;
  }

  /** The function each execution invokes (the sweeper), by its ARN only. */
  invokes(fn: IFunction): void {
    this.target = fn;
    this.role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fn.functionArn] }));
  }
}
