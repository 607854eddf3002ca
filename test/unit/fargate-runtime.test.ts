import {
  DeregisterTaskDefinitionCommand,
  DescribeTaskDefinitionCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import { CreateAccessPointCommand, DeleteAccessPointCommand } from '@aws-sdk/client-efs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FargateSandboxRuntime } from '#shared/sandboxes/fargate-sandbox-runtime.ts';
import { SandboxStartError, type StartRequest } from '#shared/sandboxes/sandbox-runtime.ts';
import { BASE_TASK_DEF, CLUSTER, fargateConfig, fargateSpec, FakeAws } from '#test/helpers/fake-aws.ts';

const SANDBOX = '0123456789abcdef0123456789abcdef';
let aws: FakeAws;
let runtime: FargateSandboxRuntime;

beforeEach(() => {
  aws = new FakeAws();
  const { ecs, efs } = aws.clients();
  runtime = new FargateSandboxRuntime(fargateConfig, ecs, efs);
});
afterEach(() => aws.restore());

const request = (overrides: Partial<StartRequest> = {}): StartRequest => ({
  sandboxId: SANDBOX,
  userId: 'alice@example.com',
  generation: 1,
  spec: fargateSpec(),
  enrollmentToken: 'enr_one-time',
  bridgeUrl: 'https://api.example.com',
  ...overrides,
});

const failWith = (name: string, message: string) => Object.assign(new Error(message), { name, $metadata: {} });

describe('FargateSandboxRuntime.start', () => {
  it('creates the access point and task definition revision once, then runs the task with exact inputs', async () => {
    const started = await runtime.start(request());

    expect(aws.efs.commandCalls(CreateAccessPointCommand).map((c) => c.args[0].input)).toEqual([
      {
        ClientToken: SANDBOX,
        FileSystemId: 'fs-0123456789abcdef0',
        PosixUser: { Uid: 1000, Gid: 1000 },
        RootDirectory: { Path: `/sandboxes/${SANDBOX}`, CreationInfo: { OwnerUid: 1000, OwnerGid: 1000, Permissions: '0750' } },
        Tags: [
          { Key: 'Name', Value: `sandbox-${SANDBOX}` },
          { Key: 'sandbox-id', Value: SANDBOX },
          { Key: 'user-id', Value: 'alice@example.com' },
        ],
      },
    ]);
    expect(aws.ecs.commandCalls(DescribeTaskDefinitionCommand).map((c) => c.args[0].input)).toEqual([{ taskDefinition: BASE_TASK_DEF }]);
    const registered = aws.ecs.commandCalls(RegisterTaskDefinitionCommand)[0]!.args[0].input;
    expect(registered).toMatchObject({
      family: 'acs-sandbox-default-sandbox',
      taskRoleArn: fargateConfig.taskRoleArn,
      executionRoleArn: fargateConfig.executionRoleArn,
      networkMode: 'awsvpc',
      requiresCompatibilities: ['FARGATE'],
      cpu: '1024',
      memory: '2048',
      runtimePlatform: { cpuArchitecture: 'ARM64', operatingSystemFamily: 'LINUX' },
      volumes: [
        {
          name: 'workspace',
          efsVolumeConfiguration: {
            fileSystemId: 'fs-0123456789abcdef0',
            transitEncryption: 'ENABLED',
            authorizationConfig: { accessPointId: `fsap-${SANDBOX.slice(0, 17)}`, iam: 'ENABLED' },
          },
        },
      ],
    });
    expect(registered.containerDefinitions![0]!.mountPoints).toEqual([{ sourceVolume: 'workspace', containerPath: '/workspace', readOnly: false }]);
    expect(registered.containerDefinitions![0]!.image).toContain('cdk-assets');

    expect(aws.ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input)).toEqual([
      {
        cluster: CLUSTER,
        capacityProviderStrategy: [{ capacityProvider: 'FARGATE', weight: 1 }],
        networkConfiguration: {
          awsvpcConfiguration: { subnets: ['subnet-aaa', 'subnet-bbb'], securityGroups: ['sg-0noingress'], assignPublicIp: 'ENABLED' },
        },
        taskDefinition: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/acs-sandbox-default-sandbox:11',
        count: 1,
        startedBy: SANDBOX,
        overrides: {
          containerOverrides: [
            {
              name: 'sandbox',
              environment: [
                { name: 'LOG_LEVEL', value: 'info' },
                { name: 'SANDBOX_ID', value: SANDBOX },
                { name: 'SANDBOX_GENERATION', value: '1' },
                { name: 'SANDBOX_MODE', value: 'run' },
                { name: 'WORKSPACE_DIR', value: '/workspace' },
                { name: 'SANDBOX_SNAPSHOTS', value: '1' },
                { name: 'BRIDGE_URL', value: 'https://api.example.com' },
                { name: 'ENROLLMENT_TOKEN', value: 'enr_one-time' },
              ],
            },
          ],
        },
        tags: [
          { key: 'sandbox-id', value: SANDBOX },
          { key: 'user-id', value: 'alice@example.com' },
        ],
        enableECSManagedTags: true,
      },
    ]);
    expect(started).toEqual({
      ref: expect.stringContaining(':task/sandboxes/'),
      state: {
        accessPointId: `fsap-${SANDBOX.slice(0, 17)}`,
        taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/acs-sandbox-default-sandbox:11',
        containerName: 'sandbox',
      },
    });
  });

  it('resumes on the same access point and revision, with Fargate Spot when the spec says so', async () => {
    const first = await runtime.start(request());
    const spot = fargateSpec({ fargate: { ...fargateSpec().fargate!, spot: true }, command: ['node', 'main.js'] });
    await runtime.start(request({ generation: 2, state: first.state, spec: spot, enrollmentToken: 'enr_second' }));
    expect(aws.efs.commandCalls(CreateAccessPointCommand)).toHaveLength(1);
    expect(aws.ecs.commandCalls(RegisterTaskDefinitionCommand)).toHaveLength(1);
    const second = aws.ecs.commandCalls(RunTaskCommand)[1]!.args[0].input;
    expect(second.capacityProviderStrategy).toEqual([{ capacityProvider: 'FARGATE_SPOT', weight: 1 }]);
    expect(second.taskDefinition).toBe(first.state.taskDefinitionArn);
    expect(second.overrides!.containerOverrides![0]!.command).toEqual(['node', 'main.js']);
    expect(second.overrides!.containerOverrides![0]!.environment).toContainEqual({ name: 'SANDBOX_GENERATION', value: '2' });
    expect(second.overrides!.containerOverrides![0]!.environment).toContainEqual({ name: 'ENROLLMENT_TOKEN', value: 'enr_second' });
  });

  it('turns throttling into a readable error and keeps what it created', async () => {
    aws.ecs.on(RunTaskCommand).rejects(failWith('ThrottlingException', 'Rate exceeded'));
    const err = (await runtime.start(request()).catch((e: unknown) => e)) as SandboxStartError;
    expect(err).toBeInstanceOf(SandboxStartError);
    expect(err.detail).toBe('AWS is throttling sandbox starts (ThrottlingException); resume the sandbox to try again');
    expect(err.state.accessPointId).toBe(`fsap-${SANDBOX.slice(0, 17)}`);
    expect(err.state.taskDefinitionArn).toContain('acs-sandbox-default-sandbox');
  });

  it('turns a lack of capacity (RunTask failures) into a readable error', async () => {
    aws.ecs.on(RunTaskCommand).resolves({
      tasks: [],
      failures: [{ arn: 'arn:aws:ecs:eu-west-1:123456789012:container-instance/x', reason: 'Capacity is unavailable at this time. Please try again later or in a different availability zone' }],
    });
    const err = (await runtime.start(request()).catch((e: unknown) => e)) as SandboxStartError;
    expect(err.detail).toBe(
      'No Fargate capacity is available right now (Capacity is unavailable at this time. Please try again later or in a different availability zone); resume the sandbox to try again',
    );
  });

  it('turns a bad task definition into a readable error', async () => {
    const spec = fargateSpec({ fargate: { taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/deleted:1', family: 'deleted', spot: false } });
    const err = (await runtime.start(request({ spec })).catch((e: unknown) => e)) as SandboxStartError;
    expect(err.detail).toBe("ECS rejected the sandbox's task definition: Unable to describe task definition.");
    aws.ecs.on(RunTaskCommand).rejects(failWith('ClientException', 'TaskDefinition is inactive'));
    const inactive = (await runtime.start(request()).catch((e: unknown) => e)) as SandboxStartError;
    expect(inactive.detail).toBe("ECS rejected the sandbox's task definition: TaskDefinition is inactive");
  });

  it('refuses a spec that is not a task definition', async () => {
    const err = (await runtime.start(request({ spec: { ...fargateSpec(), fargate: undefined } })).catch((e: unknown) => e)) as SandboxStartError;
    expect(err.detail).toBe('Sandbox spec "default" is not an ECS task definition');
    expect(aws.ecs.commandCalls(RunTaskCommand)).toHaveLength(0);
  });
});

describe('FargateSandboxRuntime.stop and destroy', () => {
  it('stops the task by ARN; a task already gone is fine', async () => {
    const started = await runtime.start(request());
    await runtime.stop({ sandboxId: SANDBOX, generation: 1, ref: started.ref });
    expect(aws.ecs.commandCalls(StopTaskCommand).map((c) => c.args[0].input)).toEqual([
      { cluster: CLUSTER, task: started.ref, reason: 'Stopped by the control plane (pause or delete)' },
    ]);
    await runtime.stop({ sandboxId: SANDBOX, generation: 1, ref: 'arn:aws:ecs:eu-west-1:123456789012:task/sandboxes/gone' });
  });

  it('finds the task of a generation by startedBy when it has no ARN yet', async () => {
    await runtime.start(request());
    const second = await runtime.start(request({ generation: 2 }));
    await runtime.stop({ sandboxId: SANDBOX, generation: 1 });
    expect(aws.ecs.commandCalls(StopTaskCommand)).toHaveLength(1);
    expect(await runtime.status({ sandboxId: SANDBOX, generation: 2, ref: second.ref })).toBe('running');
  });

  it('wipes the workspace with a wipe-mode task, then deletes the access point and deregisters the revision', async () => {
    const started = await runtime.start(request());
    const first = await runtime.destroy({ sandboxId: SANDBOX, generation: 1, ref: started.ref, state: started.state });
    expect(first.done).toBe(false);
    const wipe = aws.ecs.commandCalls(RunTaskCommand)[1]!.args[0].input;
    expect(wipe.taskDefinition).toBe(started.state.taskDefinitionArn);
    expect(wipe.startedBy).toBe(SANDBOX);
    expect(wipe.overrides!.containerOverrides![0]!.environment).toEqual([
      { name: 'SANDBOX_ID', value: SANDBOX },
      { name: 'SANDBOX_GENERATION', value: '1' },
      { name: 'SANDBOX_MODE', value: 'wipe' },
      { name: 'WORKSPACE_DIR', value: '/workspace' },
    ]);
    // Still wiping: not done, nothing deleted.
    expect((await runtime.destroy({ sandboxId: SANDBOX, generation: 1, state: first.state })).done).toBe(false);
    expect(aws.efs.commandCalls(DeleteAccessPointCommand)).toHaveLength(0);
    aws.finishWipes();
    expect(await runtime.destroy({ sandboxId: SANDBOX, generation: 1, state: first.state })).toEqual({ done: true, state: {} });
    expect(aws.efs.commandCalls(DeleteAccessPointCommand).map((c) => c.args[0].input)).toEqual([{ AccessPointId: started.state.accessPointId }]);
    expect(aws.ecs.commandCalls(DeregisterTaskDefinitionCommand).map((c) => c.args[0].input)).toEqual([
      { taskDefinition: started.state.taskDefinitionArn },
    ]);
  });

  it('retries a failed wipe, and gives up after three attempts rather than keep the access point forever', async () => {
    const started = await runtime.start(request());
    let out = await runtime.destroy({ sandboxId: SANDBOX, generation: 1, ref: started.ref, state: started.state });
    for (let attempt = 0; attempt < 3; attempt++) {
      aws.finishWipes(1);
      out = await runtime.destroy({ sandboxId: SANDBOX, generation: 1, state: out.state });
    }
    expect(out).toEqual({ done: true, state: {} });
    expect(aws.ecs.commandCalls(RunTaskCommand)).toHaveLength(4); // the sandbox and three wipes
  });

  it('lists running sandbox tasks, not wipe tasks', async () => {
    const a = await runtime.start(request());
    await runtime.destroy({ sandboxId: SANDBOX, generation: 1, ref: a.ref, state: a.state });
    const b = await runtime.start(request({ sandboxId: 'ffffffffffffffffffffffffffffffff' }));
    expect(await runtime.list()).toEqual([{ sandboxId: 'ffffffffffffffffffffffffffffffff', generation: 1, ref: b.ref }]);
  });
});
