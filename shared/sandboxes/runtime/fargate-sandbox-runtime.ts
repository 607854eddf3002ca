import {
  DescribeTasksCommand,
  ECSClient,
  paginateListTasks,
  RunTaskCommand,
  StopTaskCommand,
  TagResourceCommand,
  type KeyValuePair,
  type RunTaskCommandInput,
  type Task,
} from '@aws-sdk/client-ecs';
import { requireEnv } from '#shared/env.ts';
import { logger } from '#shared/logging.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import {
  awsErrorKind,
  describeAwsError,
  describeFailures,
  failureText,
  isCapacityFailure,
  isGone,
} from '#shared/sandboxes/runtime/fargate-errors.ts';
import { fargateSizeProblem } from '#shared/sandboxes/runtime/fargate-sizes.ts';
import { ImageTaskDefinitions, SANDBOX_CONTAINER } from '#shared/sandboxes/runtime/fargate-task-definitions.ts';
import {
  NOTICE_STATE,
  CAPACITY_STATE,
  SandboxStartError,
  type InstanceRef,
  type LaunchOptions,
  type RunningInstance,
  type RuntimeState,
  type SandboxRuntime,
  type StandbyRuntime,
  type StartRequest,
} from '#shared/sandboxes/runtime/sandbox-runtime.ts';

export interface FargateRuntimeConfig {
  clusterArn: string;
  /** Public subnets: tasks get a public IP for outbound traffic, so no NAT gateway is needed. */
  subnetIds: string[];
  /** A group with no ingress rules. */
  securityGroupId: string;
  /** The roles an image's task definition is registered with (the spec's own, which the deployment made). */
  taskRoleArn: string;
  executionRoleArn: string;
}

/** The adapter's configuration from the environment the CDK app sets. */
export function fargateConfigFromEnv(): FargateRuntimeConfig {
  return {
    clusterArn: requireEnv('ECS_CLUSTER_ARN', 'the sandbox ECS cluster'),
    subnetIds: requireEnv('SANDBOX_SUBNET_IDS', 'comma-separated public subnets for sandbox tasks')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    securityGroupId: requireEnv('SANDBOX_SECURITY_GROUP_ID', 'the sandbox security group'),
    taskRoleArn: requireEnv('SANDBOX_TASK_ROLE_ARN', 'the role sandbox tasks run as'),
    executionRoleArn: requireEnv('SANDBOX_EXECUTION_ROLE_ARN', 'the role ECS pulls images and writes logs with'),
  };
}

/** The environment a task was started with (its RunTask overrides). */
const envOf = (task: Task): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const c of task.overrides?.containerOverrides ?? [])
    for (const e of c.environment ?? []) if (e.name) out[e.name] = e.value ?? '';
  return out;
};

/**
 * Sandboxes as ECS Fargate tasks of the deployment's task definitions, one per spec (registered by
 * the CDK app), or one per spec and distinct image of a user's (registered on first use, found
 * again by its family name afterwards, never per sandbox). The workspace is not a volume: the
 * program restores it from its S3 snapshot and saves it back (SANDBOX_SNAPSHOTS=1). Events (ECS
 * "Task State Change") arrive through EventBridge, not here.
 */
export class FargateSandboxRuntime implements SandboxRuntime {
  private readonly images: ImageTaskDefinitions;

  constructor(
    private readonly config: FargateRuntimeConfig,
    private readonly ecs: ECSClient = new ECSClient({}),
  ) {
    this.images = new ImageTaskDefinitions(ecs, config);
  }

  async start(req: StartRequest): Promise<{ ref: string; state: RuntimeState }> {
    const fargate = req.spec.fargate;
    if (!fargate) throw new SandboxStartError(`Sandbox spec "${req.spec.id}" is not an ECS task definition`);
    const state: RuntimeState = { ...req.state };
    delete state[NOTICE_STATE];
    const size = this.size(req.spec, req.options);
    let provider = fargate.spot ? 'FARGATE_SPOT' : 'FARGATE';
    try {
      const taskDefinition = req.options?.image
        ? await this.images.arnOf(fargate, req.options.image)
        : fargate.taskDefinitionArn;
      const run = async (capacityProvider: string) => {
        try {
          const out = await this.ecs.send(
            new RunTaskCommand(this.runInput(req, taskDefinition, capacityProvider, size)),
          );
          return {
            taskArn: out.tasks?.[0]?.taskArn,
            failures: out.failures,
            capacity: isCapacityFailure(out.failures),
          };
        } catch (err) {
          if (awsErrorKind(err) !== 'capacity') throw err;
          return { taskArn: undefined, failures: [{ reason: describeAwsError(err) }], capacity: true };
        }
      };
      let out = await run(provider);
      if (!out.taskArn && out.capacity && provider === 'FARGATE_SPOT' && fargate.spotFallback) {
        const spotFailure = failureText(out.failures);
        provider = 'FARGATE';
        out = await run(provider);
        if (out.taskArn)
          state[NOTICE_STATE] = `Running on on-demand Fargate: Fargate Spot had no capacity (${spotFailure})`;
      }
      if (!out.taskArn) throw new SandboxStartError(describeFailures(out.failures, provider), state, out.capacity);
      state[CAPACITY_STATE] = provider;
      return { ref: out.taskArn, state };
    } catch (err) {
      if (err instanceof SandboxStartError) throw err;
      logger.warn('RunTask failed', { sandboxId: req.sandboxId, error: err as Error });
      throw new SandboxStartError(describeAwsError(err), state, awsErrorKind(err) !== 'other');
    }
  }

  /**
   * Fargate standbys: tasks of the spec's task definition started with `startedBy` = the standby id,
   * the pool credential and no sandbox in their environment, on the pool's capacity provider. ECS
   * fixes those at RunTask, so a standby serves only starts of its spec with the default image,
   * resource factor 1 and the spec's capacity. At the claim the task is tagged with its sandbox and
   * generation: what `list` (the sweep's MISSING and orphan checks) and operators read.
   */
  readonly standbys: StandbyRuntime = {
    revision: (spec) => spec.fargate?.taskDefinitionArn ?? spec.id,
    capacity: (spec) => (spec.warmPool?.spot ? 'FARGATE_SPOT' : 'FARGATE'),
    coldReason: (start) => {
      const { spec } = start;
      if (!spec.fargate) return `spec "${spec.id}" is not an ECS task definition`;
      const cold = spec.fargate.spot ? 'FARGATE_SPOT' : 'FARGATE';
      if (cold !== this.standbys.capacity(spec))
        return `the spec starts sandboxes on ${cold} and its standbys run on ${this.standbys.capacity(spec)}`;
      return undefined;
    },
    bindingPaths: () => null,
    startStandby: async (req) => {
      const fargate = req.spec.fargate;
      if (!fargate) throw new SandboxStartError(`Sandbox spec "${req.spec.id}" is not an ECS task definition`);
      const env: Record<string, string> = {
        ...req.spec.initial_env,
        STANDBY_ID: req.standbyId,
        POOL_TOKEN: req.poolToken,
        WORKSPACE_DIR: req.spec.working_dir,
        SANDBOX_SNAPSHOTS: '1',
        BRIDGE_URL: req.bridgeUrl,
      };
      const out = await this.ecs.send(
        new RunTaskCommand({
          cluster: this.config.clusterArn,
          capacityProviderStrategy: [{ capacityProvider: this.standbys.capacity(req.spec), weight: 1 }],
          networkConfiguration: {
            awsvpcConfiguration: {
              subnets: this.config.subnetIds,
              securityGroups: [this.config.securityGroupId],
              assignPublicIp: 'ENABLED',
            },
          },
          taskDefinition: fargate.taskDefinitionArn,
          count: 1,
          startedBy: req.standbyId,
          overrides: {
            containerOverrides: [
              {
                name: SANDBOX_CONTAINER,
                environment: Object.entries(env).map(([name, value]) => ({ name, value })),
                ...(req.spec.command ? { command: req.spec.command } : {}),
              },
            ],
          },
          tags: [{ key: 'pool-standby', value: req.standbyId }],
          enableECSManagedTags: true,
        }),
      );
      const taskArn = out.tasks?.[0]?.taskArn;
      if (!taskArn) throw new SandboxStartError(describeFailures(out.failures, this.standbys.capacity(req.spec)));
      return { ref: taskArn };
    },
    bindStandby: async (_standbyId, ref, req) => {
      await this.ecs.send(
        new TagResourceCommand({
          resourceArn: ref,
          tags: [
            { key: 'sandbox-id', value: req.sandboxId },
            { key: 'sandbox-generation', value: String(req.generation) },
            { key: 'user-id', value: req.userId },
          ],
        }),
      );
      return { ref, state: {} };
    },
    stopStandby: async (_standbyId, ref) => {
      if (!ref) return;
      try {
        await this.ecs.send(
          new StopTaskCommand({ cluster: this.config.clusterArn, task: ref, reason: 'Warm pool: drained' }),
        );
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    },
  };

  async stop(instance: InstanceRef): Promise<void> {
    const arns = instance.ref
      ? [instance.ref]
      : (await this.tasks(instance.sandboxId, 'RUNNING'))
          .filter((t) => t.generation === instance.generation)
          .map((t) => t.taskArn);
    for (const task of arns) {
      try {
        await this.ecs.send(
          new StopTaskCommand({
            cluster: this.config.clusterArn,
            task,
            reason: 'Stopped by the control plane (pause or delete)',
          }),
        );
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
  }

  async status(instance: InstanceRef): Promise<'running' | 'stopped'> {
    if (!instance.ref) {
      const tasks = await this.tasks(instance.sandboxId, 'RUNNING');
      return tasks.some((t) => t.generation === instance.generation) ? 'running' : 'stopped';
    }
    const task = (await this.describe([instance.ref]))[0];
    return !task || task.lastStatus === 'STOPPED' || task.desiredStatus === 'STOPPED' ? 'stopped' : 'running';
  }

  /**
   * Stops every task of the sandbox; done once none is still running, so the caller removes the
   * snapshots only after the last one (a task saves its workspace after SIGTERM). Until then
   * `done: false`: the task's STOPPED event, or the sweeper, calls again. Nothing else is per sandbox.
   */
  async destroy(instance: InstanceRef): Promise<{ done: boolean; state: RuntimeState }> {
    await this.stop(instance);
    for (const task of await this.tasks(instance.sandboxId, 'RUNNING'))
      await this.stop({ ...instance, ref: task.taskArn });
    const stopping = (await this.tasks(instance.sandboxId, 'STOPPED')).filter((t) => t.lastStatus !== 'STOPPED');
    return stopping.length ? { done: false, state: { ...instance.state } } : { done: true, state: {} };
  }

  async list(): Promise<RunningInstance[]> {
    return (await this.tasks(undefined, 'RUNNING')).map((t) => ({
      sandboxId: t.sandboxId,
      generation: t.generation,
      ref: t.taskArn,
    }));
  }

  /** The task's CPU and memory: the spec's times the resource factor, which must still be a Fargate size. */
  private size(spec: SandboxSpec, options: LaunchOptions | undefined): { cpu: number; memory: number } | undefined {
    const factor = options?.resourceFactor ?? 1;
    if (factor === 1 || spec.cpu === null || spec.memory === null) return undefined;
    const cpu = spec.cpu * factor;
    const memory = spec.memory * factor;
    const problem = fargateSizeProblem(cpu, memory);
    if (problem) {
      throw new SandboxStartError(
        `remote_runtime_resource_factor ${factor} asks for ${cpu / 1024} vCPU and ${memory} MiB (spec "${spec.id}": ${spec.cpu / 1024} vCPU, ${spec.memory} MiB), which Fargate cannot run: ${problem.message}. Choose a smaller factor`,
      );
    }
    return { cpu, memory };
  }

  private runInput(
    req: StartRequest,
    taskDefinition: string,
    capacityProvider: string,
    size: { cpu: number; memory: number } | undefined,
  ): RunTaskCommandInput {
    return {
      cluster: this.config.clusterArn,
      capacityProviderStrategy: [{ capacityProvider, weight: 1 }],
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: this.config.subnetIds,
          securityGroups: [this.config.securityGroupId],
          assignPublicIp: 'ENABLED',
        },
      },
      taskDefinition,
      count: 1,
      startedBy: req.sandboxId,
      overrides: {
        // Task-level size overrides: the definition stays the spec's, whatever the factor.
        ...(size ? { cpu: String(size.cpu), memory: String(size.memory) } : {}),
        containerOverrides: [
          {
            name: SANDBOX_CONTAINER,
            environment: this.environment(req),
            ...(req.spec.command ? { command: req.spec.command } : {}),
          },
        ],
      },
      tags: [
        { key: 'sandbox-id', value: req.sandboxId },
        { key: 'user-id', value: req.userId },
      ],
      enableECSManagedTags: true,
    };
  }

  /** The program's environment: what it needs and nothing else (no key: it enrolls with a one-time token). */
  private environment(req: StartRequest): KeyValuePair[] {
    const env: Record<string, string> = {
      ...req.spec.initial_env,
      SANDBOX_ID: req.sandboxId,
      SANDBOX_GENERATION: String(req.generation),
      WORKSPACE_DIR: req.spec.working_dir,
      // The workspace is restored from, and saved to, its snapshots in S3 (sandbox/snapshots.ts).
      SANDBOX_SNAPSHOTS: '1',
      BRIDGE_URL: req.bridgeUrl,
      ENROLLMENT_TOKEN: req.enrollmentToken,
      // A user's image: the program checks what the agent needs of it (bash, git) and says what is missing.
      ...(req.options?.image ? { SANDBOX_IMAGE_CHECK: '1' } : {}),
    };
    return Object.entries(env).map(([name, value]) => ({ name, value }));
  }

  private async describe(arns: string[]): Promise<Task[]> {
    const out: Task[] = [];
    for (let i = 0; i < arns.length; i += 100) {
      const page = await this.ecs.send(
        new DescribeTasksCommand({ cluster: this.config.clusterArn, tasks: arns.slice(i, i + 100), include: ['TAGS'] }),
      );
      out.push(...(page.tasks ?? []));
    }
    return out;
  }

  /** Sandbox tasks in the cluster by desired status (optionally of one sandbox), with the generation they were started with. */
  private async tasks(
    sandboxId: string | undefined,
    desiredStatus: 'RUNNING' | 'STOPPED',
  ): Promise<{ taskArn: string; sandboxId: string; generation: number; lastStatus?: string }[]> {
    const arns: string[] = [];
    const pages = paginateListTasks(
      { client: this.ecs },
      { cluster: this.config.clusterArn, desiredStatus, ...(sandboxId ? { startedBy: sandboxId } : {}) },
    );
    for await (const page of pages) arns.push(...(page.taskArns ?? []));
    if (!arns.length) return [];
    return (await this.describe(arns)).flatMap((task) => {
      // A claimed standby: its sandbox and generation are in the tags the claim put on it.
      const tags = Object.fromEntries((task.tags ?? []).map((t) => [t.key, t.value]));
      if (task.startedBy?.startsWith('sb_')) {
        const bound = Number(tags['sandbox-generation']);
        if (!task.taskArn || !tags['sandbox-id'] || !Number.isInteger(bound)) return [];
        if (sandboxId && tags['sandbox-id'] !== sandboxId) return [];
        return [
          { taskArn: task.taskArn, sandboxId: tags['sandbox-id'], generation: bound, lastStatus: task.lastStatus },
        ];
      }
      const generation = Number(envOf(task).SANDBOX_GENERATION);
      if (!task.taskArn || !task.startedBy || !Number.isInteger(generation)) return [];
      return [{ taskArn: task.taskArn, sandboxId: task.startedBy, generation, lastStatus: task.lastStatus }];
    });
  }
}
