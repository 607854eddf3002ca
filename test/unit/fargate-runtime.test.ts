import {
  DescribeTaskDefinitionCommand,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FargateSandboxRuntime } from '#shared/sandboxes/runtime/fargate-sandbox-runtime.ts';
import { SandboxStartError, type StartRequest } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import { BASE_TASK_DEF, CLUSTER, fargateConfig, fargateSpec, FakeAws } from '#test/helpers/fake-aws.ts';

const SANDBOX = '0123456789abcdef0123456789abcdef';
const ECR_IMAGE = '123456789012.dkr.ecr.eu-west-1.amazonaws.com/cdk-assets:abc';
let aws: FakeAws;
let runtime: FargateSandboxRuntime;

beforeEach(() => {
  aws = new FakeAws();
  runtime = new FargateSandboxRuntime(fargateConfig, aws.clients().ecs);
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
const startError = (req: StartRequest) =>
  runtime.start(req).then(
    () => undefined,
    (e: unknown) => e as SandboxStartError,
  );
const runInputs = () => aws.ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
const noCapacity = {
  tasks: [],
  failures: [
    {
      arn: 'arn:aws:ecs:eu-west-1:123456789012:container-instance/x',
      reason: 'Capacity is unavailable at this time. Please try again later or in a different availability zone',
    },
  ],
};

describe('FargateSandboxRuntime.start', () => {
  it("runs the spec's own task definition with exact inputs: no file system, no registration, the program restores from snapshots", async () => {
    const started = await runtime.start(request());
    expect(aws.ecs.commandCalls(RegisterTaskDefinitionCommand)).toHaveLength(0);
    expect(aws.ecs.commandCalls(DescribeTaskDefinitionCommand)).toHaveLength(0);
    expect(runInputs()).toEqual([
      {
        cluster: CLUSTER,
        capacityProviderStrategy: [{ capacityProvider: 'FARGATE', weight: 1 }],
        networkConfiguration: {
          awsvpcConfiguration: {
            subnets: ['subnet-aaa', 'subnet-bbb'],
            securityGroups: ['sg-0noingress'],
            assignPublicIp: 'ENABLED',
          },
        },
        taskDefinition: BASE_TASK_DEF,
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
    // The capacity it runs on is kept for the ledger (Spot or on-demand prices).
    expect(started).toEqual({ ref: expect.stringContaining(':task/sandboxes/'), state: { capacity: 'FARGATE' } });
  });

  it('resumes on the same task definition, with Fargate Spot and the spec command when the spec says so; state it does not own is kept', async () => {
    const spot = fargateSpec({ fargate: { ...fargateSpec().fargate!, spot: true }, command: ['node', 'main.js'] });
    const out = await runtime.start(
      request({ generation: 2, spec: spot, enrollmentToken: 'enr_second', state: { snapshotKey: 'k', notice: 'old' } }),
    );
    expect(out.state).toEqual({ snapshotKey: 'k', capacity: 'FARGATE_SPOT' });
    const second = runInputs()[0]!;
    expect(second.capacityProviderStrategy).toEqual([{ capacityProvider: 'FARGATE_SPOT', weight: 1 }]);
    // No platform version: LATEST (1.4.0), where FARGATE_SPOT takes the ARM64 tasks (docs/billing.md, "Spot with ARM64").
    expect(second.platformVersion).toBeUndefined();
    expect(second.taskDefinition).toBe(BASE_TASK_DEF);
    expect(second.overrides!.containerOverrides![0]!.command).toEqual(['node', 'main.js']);
    expect(second.overrides!.containerOverrides![0]!.environment).toContainEqual({
      name: 'SANDBOX_GENERATION',
      value: '2',
    });
    expect(second.overrides!.containerOverrides![0]!.environment).toContainEqual({
      name: 'ENROLLMENT_TOKEN',
      value: 'enr_second',
    });
  });

  it('multiplies CPU and memory by the resource factor through task-level overrides', async () => {
    await runtime.start(request({ options: { resourceFactor: 4 } }));
    expect(runInputs()[0]!.overrides).toMatchObject({ cpu: '4096', memory: '8192' });
    expect(runInputs()[0]!.taskDefinition).toBe(BASE_TASK_DEF);
  });

  it('refuses a factor whose product Fargate cannot run, before calling ECS, with a readable detail', async () => {
    const big = fargateSpec({ cpu: 4096, memory: 30720 });
    const err = await startError(request({ spec: big, options: { resourceFactor: 8 } }));
    expect(err).toBeInstanceOf(SandboxStartError);
    expect(err!.retryable).toBe(false);
    expect(err!.detail).toBe(
      'remote_runtime_resource_factor 8 asks for 32 vCPU and 245760 MiB (spec "default": 4 vCPU, 30720 MiB), which Fargate cannot run: Fargate cpu must be one of 256, 512, 1024, 2048, 4096, 8192, 16384. Choose a smaller factor',
    );
    const mem = await startError(
      request({ spec: fargateSpec({ cpu: 1024, memory: 8192 }), options: { resourceFactor: 4 } }),
    );
    expect(mem!.detail).toContain('asks for 4 vCPU and 32768 MiB');
    expect(mem!.detail).toContain('with cpu 4096, Fargate memory must be 8192..30720 in steps of 1024');
    expect(runInputs()).toHaveLength(0);
  });

  it("a runtime image: one task definition per image, the spec's copied with the image replaced, registered once and found again by family", async () => {
    const image = { kind: 'runtime' as const, uri: 'ghcr.io/acme/sandbox:1' };
    await runtime.start(request({ options: { image } }));
    await runtime.start(request({ sandboxId: 'ffffffffffffffffffffffffffffffff', options: { image } }));
    const registered = aws.ecs.commandCalls(RegisterTaskDefinitionCommand).map((c) => c.args[0].input);
    expect(registered).toHaveLength(1);
    expect(registered[0]).toEqual({
      family: expect.stringMatching(/^acs-sandbox-default-runtime-[0-9a-f]{16}$/),
      taskRoleArn: fargateConfig.taskRoleArn,
      executionRoleArn: fargateConfig.executionRoleArn,
      networkMode: 'awsvpc',
      requiresCompatibilities: ['FARGATE'],
      cpu: '1024',
      memory: '2048',
      runtimePlatform: { cpuArchitecture: 'ARM64', operatingSystemFamily: 'LINUX' },
      ephemeralStorage: undefined,
      containerDefinitions: [
        {
          name: 'sandbox',
          image: 'ghcr.io/acme/sandbox:1',
          essential: true,
          logConfiguration: { logDriver: 'awslogs', options: { 'awslogs-group': 'sandboxes' } },
        },
      ],
      volumes: [],
    });
    const [a, b] = runInputs();
    expect(a!.taskDefinition).toMatch(/task-definition\/acs-sandbox-default-runtime-[0-9a-f]{16}:11$/);
    expect(b!.taskDefinition).toBe(a!.taskDefinition);
    expect(a!.overrides!.containerOverrides![0]!.environment).toContainEqual({
      name: 'SANDBOX_IMAGE_CHECK',
      value: '1',
    });

    // Another container (a cold start) finds it by family rather than registering again.
    const fresh = new FargateSandboxRuntime(fargateConfig, aws.clients().ecs);
    await fresh.start(request({ options: { image } }));
    expect(aws.ecs.commandCalls(RegisterTaskDefinitionCommand)).toHaveLength(1);
    expect(runInputs()[2]!.taskDefinition).toBe(a!.taskDefinition);
  });

  it('a base image: an init container copies our program into a task volume, the image runs it after it succeeded', async () => {
    await runtime.start(request({ options: { image: { kind: 'base', uri: 'ubuntu:24.04' }, resourceFactor: 2 } }));
    const registered = aws.ecs.commandCalls(RegisterTaskDefinitionCommand)[0]!.args[0].input;
    expect(registered.family).toMatch(/^acs-sandbox-default-base-[0-9a-f]{16}$/);
    expect(registered.volumes).toEqual([{ name: 'sandbox-program' }]);
    expect(registered.containerDefinitions).toEqual([
      {
        name: 'sandbox-program',
        image: ECR_IMAGE,
        essential: false,
        user: '0',
        command: ['sh', '-c', 'cp "$(command -v node)" /app/main.mjs /opt/acs/'],
        mountPoints: [{ sourceVolume: 'sandbox-program', containerPath: '/opt/acs', readOnly: false }],
        logConfiguration: { logDriver: 'awslogs', options: { 'awslogs-group': 'sandboxes' } },
      },
      {
        name: 'sandbox',
        image: 'ubuntu:24.04',
        essential: true,
        logConfiguration: { logDriver: 'awslogs', options: { 'awslogs-group': 'sandboxes' } },
        command: ['/opt/acs/node', '/opt/acs/main.mjs'],
        mountPoints: [{ sourceVolume: 'sandbox-program', containerPath: '/opt/acs', readOnly: true }],
        dependsOn: [{ containerName: 'sandbox-program', condition: 'SUCCESS' }],
        environment: [{ name: 'NODE_ENV', value: 'production' }],
      },
    ]);
    expect(runInputs()[0]!.overrides).toMatchObject({ cpu: '2048', memory: '4096' });
  });

  it('throttling is retryable, with a readable detail', async () => {
    aws.ecs.on(RunTaskCommand).rejects(failWith('ThrottlingException', 'Rate exceeded'));
    const err = await startError(request());
    expect(err).toBeInstanceOf(SandboxStartError);
    expect(err!.retryable).toBe(true);
    expect(err!.detail).toBe('AWS is throttling sandbox starts (ThrottlingException: Rate exceeded)');
  });

  it('concurrent registrations of one image family are retried like throttling', async () => {
    aws.ecs
      .on(RegisterTaskDefinitionCommand)
      .rejects(
        failWith('ClientException', 'Too many concurrent attempts to create a new revision of the specified family.'),
      );
    const err = await startError(request({ options: { image: { kind: 'runtime', uri: 'ghcr.io/acme/sandbox:1' } } }));
    expect(err!.retryable).toBe(true);
    expect(err!.detail).toBe(
      'AWS is throttling sandbox starts (ClientException: Too many concurrent attempts to create a new revision of the specified family.)',
    );
  });

  it('no capacity (RunTask failures) is retryable and names the capacity that was missing', async () => {
    aws.ecs.on(RunTaskCommand).resolves(noCapacity);
    const err = await startError(request());
    expect(err!.retryable).toBe(true);
    expect(err!.detail).toBe(
      'No Fargate capacity was available (Capacity is unavailable at this time. Please try again later or in a different availability zone)',
    );
    const spot = await startError(
      request({ spec: fargateSpec({ fargate: { ...fargateSpec().fargate!, spot: true } }) }),
    );
    expect(spot!.detail).toMatch(/^No Fargate Spot capacity was available/);
    // Without the spec's permission, Spot never falls back.
    expect(runInputs().map((i) => i.capacityProviderStrategy![0]!.capacityProvider)).toEqual([
      'FARGATE',
      'FARGATE_SPOT',
    ]);
  });

  it('falls back from Spot to on-demand when the spec allows it, and says so in the notice', async () => {
    aws.ecs
      .on(RunTaskCommand, { capacityProviderStrategy: [{ capacityProvider: 'FARGATE_SPOT', weight: 1 }] })
      .resolves(noCapacity);
    const spec = fargateSpec({ fargate: { ...fargateSpec().fargate!, spot: true, spotFallback: true } });
    const out = await runtime.start(request({ spec }));
    expect(runInputs().map((i) => i.capacityProviderStrategy![0]!.capacityProvider)).toEqual([
      'FARGATE_SPOT',
      'FARGATE',
    ]);
    expect(out.state.notice).toBe(
      'Running on on-demand Fargate: Fargate Spot had no capacity (Capacity is unavailable at this time. Please try again later or in a different availability zone)',
    );
    // Priced on-demand in the ledger: the capacity it runs on, not the spec's wish.
    expect(out.state.capacity).toBe('FARGATE');
    // Neither has capacity: the error names on-demand, the one tried last, and is retryable.
    aws.ecs.on(RunTaskCommand).resolves(noCapacity);
    const err = await startError(request({ spec }));
    expect(err!.detail).toMatch(/^No Fargate capacity was available/);
    expect(err!.retryable).toBe(true);
  });

  it('a bad task definition is an error that is not retried', async () => {
    const spec = fargateSpec({
      fargate: {
        taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/deleted:1',
        family: 'deleted',
        spot: false,
      },
    });
    const err = await startError(request({ spec }));
    expect(err!.detail).toBe("ECS rejected the sandbox's task definition: TaskDefinition not found.");
    expect(err!.retryable).toBe(false);
    const image = await startError(request({ spec, options: { image: { kind: 'runtime', uri: 'x:1' } } }));
    expect(image!.detail).toBe("ECS rejected the sandbox's task definition: Unable to describe task definition.");
  });

  it('refuses a spec that is not a task definition', async () => {
    const err = await startError(request({ spec: { ...fargateSpec(), fargate: undefined } }));
    expect(err!.detail).toBe('Sandbox spec "default" is not an ECS task definition');
    expect(runInputs()).toHaveLength(0);
  });
});

describe('FargateSandboxRuntime.stop and destroy', () => {
  it('stops the task by ARN; a task already gone is fine', async () => {
    const started = await runtime.start(request());
    await runtime.stop({ sandboxId: SANDBOX, generation: 1, ref: started.ref });
    expect(aws.ecs.commandCalls(StopTaskCommand).map((c) => c.args[0].input)).toEqual([
      { cluster: CLUSTER, task: started.ref, reason: 'Stopped by the control plane (pause or delete)' },
    ]);
    await runtime.stop({
      sandboxId: SANDBOX,
      generation: 1,
      ref: 'arn:aws:ecs:eu-west-1:123456789012:task/sandboxes/gone',
    });
  });

  it('finds the task of a generation by startedBy when it has no ARN yet', async () => {
    await runtime.start(request());
    const second = await runtime.start(request({ generation: 2 }));
    await runtime.stop({ sandboxId: SANDBOX, generation: 1 });
    expect(aws.ecs.commandCalls(StopTaskCommand)).toHaveLength(1);
    expect(await runtime.status({ sandboxId: SANDBOX, generation: 2, ref: second.ref })).toBe('running');
  });

  it('destroy stops every task of the sandbox and is done only once none is still stopping (its last snapshot is saved by then)', async () => {
    aws.stopsLinger = true;
    const a = await runtime.start(request());
    await runtime.start(request({ generation: 2 }));
    const first = await runtime.destroy({ sandboxId: SANDBOX, generation: 2, state: { snapshotKey: 'k' } });
    expect(first).toEqual({ done: false, state: { snapshotKey: 'k' } });
    expect(aws.ecs.commandCalls(StopTaskCommand)).toHaveLength(2);
    expect(aws.ecs.commandCalls(ListTasksCommand).map((c) => c.args[0].input.desiredStatus)).toContain('STOPPED');
    aws.finishStops();
    expect(await runtime.destroy({ sandboxId: SANDBOX, generation: 2, ref: a.ref, state: first.state })).toEqual({
      done: true,
      state: {},
    });
    expect(aws.ecs.commandCalls(RunTaskCommand)).toHaveLength(2);
  });

  it('reads every page ListTasks answers (one task a page here)', async () => {
    const ids = ['a', 'b', 'c'].map((c) => c.repeat(32));
    const refs: string[] = [];
    for (const sandboxId of ids) refs.push((await runtime.start(request({ sandboxId }))).ref);
    const tokens: (string | undefined)[] = [];
    aws.ecs.on(ListTasksCommand).callsFake(async ({ nextToken }) => {
      tokens.push(nextToken);
      const i = nextToken ? Number(nextToken) : 0;
      return { taskArns: [refs[i]!], ...(i + 1 < refs.length ? { nextToken: String(i + 1) } : {}) };
    });
    expect((await runtime.list()).map((t) => t.sandboxId)).toEqual(ids);
    expect(tokens).toEqual([undefined, '1', '2']);
  });

  it('lists running sandbox tasks only', async () => {
    const a = await runtime.start(request());
    await runtime.destroy({ sandboxId: SANDBOX, generation: 1, ref: a.ref, state: a.state });
    const b = await runtime.start(request({ sandboxId: 'ffffffffffffffffffffffffffffffff' }));
    expect(await runtime.list()).toEqual([
      { sandboxId: 'ffffffffffffffffffffffffffffffff', generation: 1, ref: b.ref },
    ]);
  });
});
