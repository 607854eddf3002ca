import {
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type Task,
  type TaskDefinition,
} from '@aws-sdk/client-ecs';
import { mockClient } from 'aws-sdk-client-mock';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import type { FargateRuntimeConfig } from '#shared/sandboxes/runtime/fargate-sandbox-runtime.ts';

export const REGION = 'eu-west-1';
export const ACCOUNT = '123456789012';
export const CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sandboxes`;
export const BASE_TASK_DEF = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/acs-sandbox-default:3`;

export const fargateConfig: FargateRuntimeConfig = {
  clusterArn: CLUSTER,
  subnetIds: ['subnet-aaa', 'subnet-bbb'],
  securityGroupId: 'sg-0noingress',
  taskRoleArn: `arn:aws:iam::${ACCOUNT}:role/sandbox-task`,
  executionRoleArn: `arn:aws:iam::${ACCOUNT}:role/sandbox-execution`,
};

export const fargateSpec = (overrides: Partial<SandboxSpec> = {}): SandboxSpec => ({
  id: 'default',
  command: null,
  created_at: '2025-11-01T00:00:00.000Z',
  initial_env: { LOG_LEVEL: 'info' },
  working_dir: '/workspace',
  cpu: 1024,
  memory: 2048,
  fargate: { taskDefinitionArn: BASE_TASK_DEF, family: 'acs-sandbox-default', spot: false },
  ...overrides,
});

/** The spec registry JSON the CDK app writes into SANDBOX_SPECS. */
export const sandboxSpecsEnv = (spot = false) =>
  JSON.stringify([
    {
      id: 'default',
      task_definition_arn: BASE_TASK_DEF,
      family: 'acs-sandbox-default',
      cpu: '1024',
      memory: '2048',
      spot,
      command: null,
      initial_env: { LOG_LEVEL: 'info' },
      working_dir: '/workspace',
      created_at: '2025-11-01T00:00:00.000Z',
    },
  ]);

/**
 * ECS at the SDK boundary (aws-sdk-client-mock), with just enough state to behave like the
 * service: tasks run until stopped (at once, or after `finishStops()` with `stopsLinger`),
 * registered task definitions are found again by ARN or family.
 */
export class FakeAws {
  readonly ecs = mockClient(ECSClient);
  readonly tasks = new Map<string, Task>();
  /** Task definitions registered at run time, by ARN. */
  readonly registered = new Map<string, TaskDefinition>();
  /** StopTask leaves the task stopping (desired STOPPED, last RUNNING) until `finishStops()`. */
  stopsLinger = false;
  private counter = 0;
  private revision = 10;

  constructor() {
    this.ecs.on(DescribeTaskDefinitionCommand).callsFake(async ({ taskDefinition }) => {
      const found =
        this.registered.get(taskDefinition) ??
        [...this.registered.values()].filter((d) => d.family === taskDefinition).at(-1);
      if (found) return { taskDefinition: found };
      if (taskDefinition !== BASE_TASK_DEF) {
        throw Object.assign(new Error('Unable to describe task definition.'), { name: 'ClientException' });
      }
      return {
        taskDefinition: {
          taskDefinitionArn: BASE_TASK_DEF,
          family: 'acs-sandbox-default',
          cpu: '1024',
          memory: '2048',
          networkMode: 'awsvpc',
          runtimePlatform: { cpuArchitecture: 'ARM64', operatingSystemFamily: 'LINUX' },
          containerDefinitions: [
            {
              name: 'sandbox',
              image: `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/cdk-assets:abc`,
              essential: true,
              logConfiguration: { logDriver: 'awslogs', options: { 'awslogs-group': 'sandboxes' } },
            },
          ],
          volumes: [],
        },
      };
    });
    this.ecs.on(RegisterTaskDefinitionCommand).callsFake(async (input) => {
      const taskDefinition = {
        ...input,
        taskDefinitionArn: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/${input.family}:${++this.revision}`,
        status: 'ACTIVE',
      } as TaskDefinition;
      this.registered.set(taskDefinition.taskDefinitionArn!, taskDefinition);
      return { taskDefinition };
    });
    this.ecs.on(RunTaskCommand).callsFake(async (input) => {
      if (input.taskDefinition !== BASE_TASK_DEF && !this.registered.has(input.taskDefinition!)) {
        throw Object.assign(new Error('TaskDefinition not found.'), { name: 'ClientException' });
      }
      const taskArn = `arn:aws:ecs:${REGION}:${ACCOUNT}:task/sandboxes/${(++this.counter).toString(16).padStart(32, '0')}`;
      const task: Task = {
        taskArn,
        clusterArn: CLUSTER,
        startedBy: input.startedBy,
        lastStatus: 'PROVISIONING',
        desiredStatus: 'RUNNING',
        overrides: input.overrides,
        containers: [{ name: 'sandbox', lastStatus: 'PENDING' }],
      };
      this.tasks.set(taskArn, task);
      return { tasks: [task], failures: [] };
    });
    this.ecs.on(StopTaskCommand).callsFake(async ({ task }) => {
      const found = this.tasks.get(task);
      if (!found)
        throw Object.assign(new Error('The referenced task was not found.'), { name: 'InvalidParameterException' });
      found.desiredStatus = 'STOPPED';
      if (!this.stopsLinger) found.lastStatus = 'STOPPED';
      found.stopCode = 'UserInitiated';
      return { task: found };
    });
    this.ecs.on(ListTasksCommand).callsFake(async ({ startedBy, desiredStatus }) => ({
      taskArns: [...this.tasks.values()]
        .filter((t) => t.desiredStatus === (desiredStatus ?? 'RUNNING') && (!startedBy || t.startedBy === startedBy))
        .map((t) => t.taskArn!),
    }));
    this.ecs.on(DescribeTasksCommand).callsFake(async ({ tasks }) => ({
      tasks: (tasks as string[]).flatMap((arn) => (this.tasks.has(arn) ? [this.tasks.get(arn)!] : [])),
      failures: (tasks as string[]).filter((arn) => !this.tasks.has(arn)).map((arn) => ({ arn, reason: 'MISSING' })),
    }));
  }

  /** Stopping tasks finish stopping (their containers exited). */
  finishStops(): void {
    for (const t of this.tasks.values()) if (t.desiredStatus === 'STOPPED') t.lastStatus = 'STOPPED';
  }

  clients() {
    return { ecs: new ECSClient({ region: REGION }) };
  }

  restore(): void {
    this.ecs.restore();
  }
}
