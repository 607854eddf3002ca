import { resolve } from 'node:path';
import { type Duration, Stack } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing, type IDestination } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { bundlingFor, REPO_ROOT } from '#infra/bundle.ts';
import { accessStatements, logActions, onFailureActions, type FunctionAccess, type GrantTargets } from '#infra/iam.ts';
import type { TableKey } from '#shared/store/tables.ts';

export interface ServiceFunctionProps {
  entry: string;
  access: FunctionAccess;
  environment: Record<string, string>;
  logGroup: ILogGroup;
  tables: Record<TableKey, ITableV2>;
  targets: GrantTargets;
  timeout: Duration;
  memorySize?: number;
  /** Its name, when its ARN must be known before it exists (infra/stack.ts `functionNameOf`); else CloudFormation names it. */
  functionName?: string;
  /** Reserved concurrency (a cap and a guarantee); unset: none, the function shares the account's pool. */
  reservedConcurrency?: number;
  /** For asynchronously invoked functions: where a failed event goes after the retries. */
  async?: { onFailure: IQueue; retryAttempts: number; maxEventAge: Duration };
}

/**
 * A Lambda function with a role of its own that allows exactly what its declaration asks for
 * (infra/iam.ts), writing to the shared log group. No managed policies: the AWS basic execution
 * policy would let it write to any log group.
 */
export class ServiceFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    this.role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    this.role.addToPolicy(new PolicyStatement({ actions: [...logActions], resources: [props.logGroup.logGroupArn] }));
    for (const statement of accessStatements(Stack.of(this), props.access, props.tables, props.targets))
      this.role.addToPolicy(statement);

    this.fn = new NodejsFunction(this, 'Function', {
      entry: resolve(REPO_ROOT, props.entry),
      handler: 'handler',
      ...(props.functionName === undefined ? {} : { functionName: props.functionName }),
      projectRoot: REPO_ROOT,
      depsLockFilePath: resolve(REPO_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role: this.role,
      logGroup: props.logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      bundling: bundlingFor(props.entry),
      ...(props.reservedConcurrency === undefined ? {} : { reservedConcurrentExecutions: props.reservedConcurrency }),
      environment: { POWERTOOLS_SERVICE_NAME: 'agent-conversation-service', ...props.environment },
      ...(props.async
        ? {
            retryAttempts: props.async.retryAttempts,
            maxEventAge: props.async.maxEventAge,
            onFailure: sendOnly(props.async.onFailure),
          }
        : {}),
    });
  }
}

/** An SQS on-failure destination granting only sqs:SendMessage (CDK's own adds queue reads). */
function sendOnly(queue: IQueue): IDestination {
  return {
    bind: (_scope, fn) => {
      fn.addToRolePolicy(new PolicyStatement({ actions: [...onFailureActions], resources: [queue.queueArn] }));
      return { destination: queue.queueArn };
    },
  };
}
