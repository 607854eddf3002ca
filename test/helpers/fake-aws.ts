import {
  DeregisterTaskDefinitionCommand,
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type Task,
} from '@aws-sdk/client-ecs';
import { CreateAccessPointCommand, DeleteAccessPointCommand, EFSClient } from '@aws-sdk/client-efs';
import { mockClient } from 'aws-sdk-client-mock';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import type { FargateRuntimeConfig } from '#shared/sandboxes/fargate-sandbox-runtime.ts';

export const REGION = 'eu-west-1';
export const ACCOUNT = '123456789012';
export const CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sandboxes`;
export const BASE_TASK_DEF = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/acs-sandbox-default:3`;

export const fargateConfig: FargateRuntimeConfig = {
  clusterArn: CLUSTER,
  subnetIds: ['subnet-aaa', 'subnet-bbb'],
  securityGroupId: 'sg-0noingress',
  fileSystemId: 'fs-0123456789abcdef0',
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
 * ECS and EFS at the SDK boundary (aws-sdk-client-mock), with just enough state to behave like the
 * services: tasks run until stopped, wipe tasks finish when `finishWipes()` says so.
 */
export class FakeAws {
  readonly ecs = mockClient(ECSClient);
  readonly efs = mockClient(EFSClient);
  readonly tasks = new Map<string, Task>();
  private counter = 0;
  private revision = 10;

  constructor() {
    this.ecs.on(DescribeTaskDefinitionCommand).callsFake(async ({ taskDefinition }) => {
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
    this.ecs.on(RegisterTaskDefinitionCommand).callsFake(async ({ family }) => ({
      taskDefinition: { taskDefinitionArn: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/${family}:${++this.revision}` },
    }));
    this.ecs.on(DeregisterTaskDefinitionCommand).resolves({});
    this.ecs.on(RunTaskCommand).callsFake(async (input) => {
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
      if (!found) throw Object.assign(new Error('The referenced task was not found.'), { name: 'InvalidParameterException' });
      found.desiredStatus = 'STOPPED';
      found.lastStatus = 'STOPPED';
      found.stopCode = 'UserInitiated';
      return { task: found };
    });
    this.ecs.on(ListTasksCommand).callsFake(async ({ startedBy }) => ({
      taskArns: [...this.tasks.values()]
        .filter((t) => t.desiredStatus === 'RUNNING' && (!startedBy || t.startedBy === startedBy))
        .map((t) => t.taskArn!),
    }));
    this.ecs.on(DescribeTasksCommand).callsFake(async ({ tasks }) => ({
      tasks: (tasks as string[]).flatMap((arn) => (this.tasks.has(arn) ? [this.tasks.get(arn)!] : [])),
      failures: (tasks as string[]).filter((arn) => !this.tasks.has(arn)).map((arn) => ({ arn, reason: 'MISSING' })),
    }));
    this.efs.on(CreateAccessPointCommand).callsFake(async ({ ClientToken }) => ({ AccessPointId: `fsap-${ClientToken.slice(0, 17)}` }));
    this.efs.on(DeleteAccessPointCommand).resolves({});
  }

  /** Wipe tasks complete (the program emptied the workspace and exited 0). */
  finishWipes(exitCode = 0): void {
    for (const t of this.tasks.values()) {
      const mode = t.overrides?.containerOverrides?.[0]?.environment?.find((e) => e.name === 'SANDBOX_MODE')?.value;
      if (mode === 'wipe' && t.lastStatus !== 'STOPPED') {
        t.lastStatus = 'STOPPED';
        t.desiredStatus = 'STOPPED';
        t.stopCode = 'EssentialContainerExited';
        t.containers = [{ name: 'sandbox', lastStatus: 'STOPPED', exitCode }];
      }
    }
  }

  clients() {
    return { ecs: new ECSClient({ region: REGION }), efs: new EFSClient({ region: REGION }) };
  }

  restore(): void {
    this.ecs.restore();
    this.efs.restore();
  }
}
