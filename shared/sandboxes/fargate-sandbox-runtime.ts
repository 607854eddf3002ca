import {
  DeregisterTaskDefinitionCommand,
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type Failure,
  type KeyValuePair,
  type Task,
  type TaskDefinition,
} from '@aws-sdk/client-ecs';
import { CreateAccessPointCommand, DeleteAccessPointCommand, EFSClient } from '@aws-sdk/client-efs';
import { logger } from '#shared/logging.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import {
  SandboxStartError,
  type InstanceRef,
  type RunningInstance,
  type RuntimeState,
  type SandboxRuntime,
  type StartRequest,
} from '#shared/sandboxes/sandbox-runtime.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';

export interface FargateRuntimeConfig {
  clusterArn: string;
  /** Public subnets: tasks get a public IP for outbound traffic, so no NAT gateway is needed. */
  subnetIds: string[];
  /** A group with no ingress rules. */
  securityGroupId: string;
  /** The EFS file system that holds every workspace (one access point per sandbox). */
  fileSystemId: string;
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
    fileSystemId: requireEnv('SANDBOX_FILE_SYSTEM_ID', 'the EFS file system of sandbox workspaces'),
    taskRoleArn: requireEnv('SANDBOX_TASK_ROLE_ARN', 'the role sandbox tasks run as'),
    executionRoleArn: requireEnv('SANDBOX_EXECUTION_ROLE_ARN', 'the role ECS pulls images and writes logs with'),
  };
}

/** The volume name of the workspace in per-sandbox task definition revisions. */
export const WORKSPACE_VOLUME = 'workspace';
/** The POSIX identity files are created with (the image's `node` user). */
const SANDBOX_UID = 1000;
const WIPE_ATTEMPTS = 3;

/** A readable sentence for an SDK error, for the sandbox's `detail`. */
export function describeAwsError(err: unknown): string {
  const name = (err as { name?: string })?.name ?? 'Error';
  const message = (err as { message?: string })?.message ?? String(err);
  if (/Throttl|TooManyRequests|RequestLimitExceeded/i.test(name)) {
    return `AWS is throttling sandbox starts (${name}); resume the sandbox to try again`;
  }
  if (/capacity/i.test(message)) return `No Fargate capacity is available right now (${message}); resume the sandbox to try again`;
  if (/task ?definition/i.test(message) || name === 'ClientException') return `ECS rejected the sandbox's task definition: ${message}`;
  if (name === 'AccessPointLimitExceeded') return `The workspace file system has no room for another access point: ${message}`;
  return `ECS could not start the sandbox (${name}): ${message}`;
}

/** A readable sentence for RunTask's `failures`. */
export function describeFailures(failures: Failure[] | undefined): string {
  const reasons = (failures ?? []).map((f) => [f.reason, f.detail].filter(Boolean).join(': ')).filter(Boolean);
  const text = reasons.join('; ') || 'RunTask started no task and gave no reason';
  if (/capacity|RESOURCE:/i.test(text)) return `No Fargate capacity is available right now (${text}); resume the sandbox to try again`;
  return `ECS could not start the sandbox: ${text}`;
}

const envOf = (task: Task): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const c of task.overrides?.containerOverrides ?? []) for (const e of c.environment ?? []) if (e.name) out[e.name] = e.value ?? '';
  return out;
};

const isGone = (err: unknown) => /not found|does not exist|inactive/i.test((err as Error)?.message ?? '') || (err as Error)?.name === 'AccessPointNotFound';

interface SandboxTask {
  taskArn: string;
  sandboxId: string;
  generation: number;
  mode: string;
  lastStatus?: string;
}

/**
 * Sandboxes as ECS Fargate tasks. The workspace is an EFS access point per sandbox (its own root
 * directory, POSIX user 1000), mounted by a task definition revision per sandbox, since RunTask
 * cannot override volumes. Events (ECS "Task State Change") arrive through EventBridge, not here.
 */
export class FargateSandboxRuntime implements SandboxRuntime {
  private readonly baseDefinitions = new Map<string, Promise<TaskDefinition>>();

  constructor(
    private readonly config: FargateRuntimeConfig,
    private readonly ecs: ECSClient = new ECSClient({}),
    private readonly efs: EFSClient = new EFSClient({}),
  ) {}

  async start(req: StartRequest): Promise<{ ref: string; state: RuntimeState }> {
    const fargate = req.spec.fargate;
    if (!fargate) throw new SandboxStartError(`Sandbox spec "${req.spec.id}" is not an ECS task definition`);
    const state: RuntimeState = { ...req.state };
    try {
      state.accessPointId ??= await this.createAccessPoint(req);
      if (!state.taskDefinitionArn || !state.containerName) Object.assign(state, await this.registerRevision(req, state.accessPointId));
      const out = await this.ecs.send(
        new RunTaskCommand({
          ...this.taskPlacement(fargate.spot),
          taskDefinition: state.taskDefinitionArn,
          count: 1,
          startedBy: req.sandboxId,
          overrides: {
            containerOverrides: [
              {
                name: state.containerName,
                environment: this.environment(req.sandboxId, req.generation, req.spec, 'run', {
                  // The workspace is restored from, and saved to, its snapshots in S3 (sandbox/snapshots.ts).
                  SANDBOX_SNAPSHOTS: '1',
                  BRIDGE_URL: req.bridgeUrl,
                  ENROLLMENT_TOKEN: req.enrollmentToken,
                }),
                ...(req.spec.command ? { command: req.spec.command } : {}),
              },
            ],
          },
          tags: [
            { key: 'sandbox-id', value: req.sandboxId },
            { key: 'user-id', value: req.userId },
          ],
          enableECSManagedTags: true,
        }),
      );
      const taskArn = out.tasks?.[0]?.taskArn;
      if (!taskArn) throw new SandboxStartError(describeFailures(out.failures), state);
      return { ref: taskArn, state };
    } catch (err) {
      if (err instanceof SandboxStartError) throw err;
      logger.warn('RunTask failed', { sandboxId: req.sandboxId, error: err as Error });
      throw new SandboxStartError(describeAwsError(err), state);
    }
  }

  async stop(instance: InstanceRef): Promise<void> {
    const arns = instance.ref
      ? [instance.ref]
      : (await this.tasks(instance.sandboxId)).filter((t) => t.mode === 'run' && t.generation === instance.generation).map((t) => t.taskArn);
    for (const task of arns) {
      try {
        await this.ecs.send(new StopTaskCommand({ cluster: this.config.clusterArn, task, reason: 'Stopped by the control plane (pause or delete)' }));
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
  }

  async status(instance: InstanceRef): Promise<'running' | 'stopped'> {
    if (!instance.ref) {
      const tasks = await this.tasks(instance.sandboxId);
      return tasks.some((t) => t.mode === 'run' && t.generation === instance.generation) ? 'running' : 'stopped';
    }
    const task = (await this.describe([instance.ref]))[0];
    return !task || task.lastStatus === 'STOPPED' || task.desiredStatus === 'STOPPED' ? 'stopped' : 'running';
  }

  /**
   * Stops the task, then wipes the workspace with a task in wipe mode (the program empties its
   * workspace and exits), then deletes the access point and deregisters the revision. The wipe
   * runs asynchronously: `done: false` until its task has stopped (the ECS event calls again).
   */
  async destroy(instance: InstanceRef): Promise<{ done: boolean; state: RuntimeState }> {
    const state: RuntimeState = { ...instance.state };
    await this.stop(instance);
    if (state.taskDefinitionArn && state.containerName && state.wipe !== 'done' && state.wipe !== 'failed') {
      if (state.wipeTaskArn) {
        const task = (await this.describe([state.wipeTaskArn]))[0];
        if (task && task.lastStatus !== 'STOPPED') return { done: false, state };
        const ok = task?.containers?.some((c) => c.name === state.containerName && c.exitCode === 0) ?? false;
        delete state.wipeTaskArn;
        if (ok) state.wipe = 'done';
        else if (Number(state.wipeAttempts ?? 0) >= WIPE_ATTEMPTS) {
          logger.error('Workspace wipe failed repeatedly; removing the access point without it', { sandboxId: instance.sandboxId });
          state.wipe = 'failed';
        }
      }
      if (!state.wipe) {
        const out = await this.ecs.send(
          new RunTaskCommand({
            ...this.taskPlacement(false),
            taskDefinition: state.taskDefinitionArn,
            count: 1,
            startedBy: instance.sandboxId,
            overrides: {
              containerOverrides: [{ name: state.containerName, environment: this.environment(instance.sandboxId, instance.generation, null, 'wipe', {}) }],
            },
            tags: [{ key: 'sandbox-id', value: instance.sandboxId }],
          }),
        );
        const arn = out.tasks?.[0]?.taskArn;
        if (!arn) throw new Error(describeFailures(out.failures));
        state.wipeTaskArn = arn;
        state.wipeAttempts = String(Number(state.wipeAttempts ?? 0) + 1);
        return { done: false, state };
      }
    }
    if (state.accessPointId) {
      try {
        await this.efs.send(new DeleteAccessPointCommand({ AccessPointId: state.accessPointId }));
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
    if (state.taskDefinitionArn) {
      try {
        await this.ecs.send(new DeregisterTaskDefinitionCommand({ taskDefinition: state.taskDefinitionArn }));
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
    return { done: true, state: {} };
  }

  async list(): Promise<RunningInstance[]> {
    return (await this.tasks())
      .filter((t) => t.mode === 'run')
      .map((t) => ({ sandboxId: t.sandboxId, generation: t.generation, ref: t.taskArn }));
  }

  private taskPlacement(spot: boolean) {
    return {
      cluster: this.config.clusterArn,
      capacityProviderStrategy: [{ capacityProvider: spot ? 'FARGATE_SPOT' : 'FARGATE', weight: 1 }],
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: this.config.subnetIds,
          securityGroups: [this.config.securityGroupId],
          assignPublicIp: 'ENABLED' as const,
        },
      },
    };
  }

  /** The program's environment: what it needs and nothing else (no key: it enrolls with a one-time token). */
  private environment(sandboxId: string, generation: number, spec: SandboxSpec | null, mode: 'run' | 'wipe', extra: Record<string, string>): KeyValuePair[] {
    const env: Record<string, string> = {
      ...(spec?.initial_env ?? {}),
      SANDBOX_ID: sandboxId,
      SANDBOX_GENERATION: String(generation),
      SANDBOX_MODE: mode,
      WORKSPACE_DIR: spec?.working_dir ?? '/workspace',
      ...extra,
    };
    return Object.entries(env).map(([name, value]) => ({ name, value }));
  }

  private async createAccessPoint(req: StartRequest): Promise<string> {
    const out = await this.efs.send(
      new CreateAccessPointCommand({
        // Idempotent per sandbox: a retried first start gets the same access point back.
        ClientToken: req.sandboxId,
        FileSystemId: this.config.fileSystemId,
        PosixUser: { Uid: SANDBOX_UID, Gid: SANDBOX_UID },
        RootDirectory: {
          Path: `/sandboxes/${req.sandboxId}`,
          CreationInfo: { OwnerUid: SANDBOX_UID, OwnerGid: SANDBOX_UID, Permissions: '0750' },
        },
        Tags: [
          { Key: 'Name', Value: `sandbox-${req.sandboxId}` },
          { Key: 'sandbox-id', Value: req.sandboxId },
          { Key: 'user-id', Value: req.userId },
        ],
      }),
    );
    if (!out.AccessPointId) throw new Error('CreateAccessPoint returned no access point id');
    return out.AccessPointId;
  }

  /** A copy of the spec's task definition whose main container mounts this sandbox's access point. */
  private async registerRevision(req: StartRequest, accessPointId: string): Promise<{ taskDefinitionArn: string; containerName: string }> {
    const fargate = req.spec.fargate!;
    const base = await this.baseDefinition(fargate.taskDefinitionArn);
    const containers = base.containerDefinitions ?? [];
    const main = containers.find((c) => c.essential !== false) ?? containers[0];
    if (!main?.name) throw new SandboxStartError(`Task definition ${fargate.taskDefinitionArn} has no container`);
    const out = await this.ecs.send(
      new RegisterTaskDefinitionCommand({
        family: `${fargate.family}-sandbox`,
        taskRoleArn: this.config.taskRoleArn,
        executionRoleArn: this.config.executionRoleArn,
        networkMode: 'awsvpc',
        requiresCompatibilities: ['FARGATE'],
        cpu: base.cpu,
        memory: base.memory,
        runtimePlatform: base.runtimePlatform,
        ephemeralStorage: base.ephemeralStorage,
        containerDefinitions: containers.map((c) =>
          c.name !== main.name
            ? c
            : {
                ...c,
                mountPoints: [
                  ...(c.mountPoints ?? []).filter((m) => m.sourceVolume !== WORKSPACE_VOLUME),
                  { sourceVolume: WORKSPACE_VOLUME, containerPath: req.spec.working_dir, readOnly: false },
                ],
              },
        ),
        volumes: [
          ...(base.volumes ?? []).filter((v) => v.name !== WORKSPACE_VOLUME),
          {
            name: WORKSPACE_VOLUME,
            efsVolumeConfiguration: {
              fileSystemId: this.config.fileSystemId,
              transitEncryption: 'ENABLED',
              authorizationConfig: { accessPointId, iam: 'ENABLED' },
            },
          },
        ],
        tags: [{ key: 'sandbox-id', value: req.sandboxId }],
      }),
    );
    const arn = out.taskDefinition?.taskDefinitionArn;
    if (!arn) throw new Error('RegisterTaskDefinition returned no ARN');
    return { taskDefinitionArn: arn, containerName: main.name };
  }

  /** The spec's own task definition, described once per container (specs change only with a deployment). */
  private baseDefinition(arn: string): Promise<TaskDefinition> {
    let found = this.baseDefinitions.get(arn);
    if (!found) {
      found = this.ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: arn })).then((out) => {
        if (!out.taskDefinition) throw new Error(`Task definition ${arn} not found`);
        return out.taskDefinition;
      });
      found.catch(() => this.baseDefinitions.delete(arn));
      this.baseDefinitions.set(arn, found);
    }
    return found;
  }

  private async describe(arns: string[]): Promise<Task[]> {
    const out: Task[] = [];
    for (let i = 0; i < arns.length; i += 100) {
      const page = await this.ecs.send(new DescribeTasksCommand({ cluster: this.config.clusterArn, tasks: arns.slice(i, i + 100) }));
      out.push(...(page.tasks ?? []));
    }
    return out;
  }

  /** Running sandbox tasks in the cluster (optionally of one sandbox), with the generation and mode they were started with. */
  private async tasks(sandboxId?: string): Promise<SandboxTask[]> {
    const arns: string[] = [];
    let nextToken: string | undefined;
    for (let page = 0; page < 100; page++) {
      const out = await this.ecs.send(
        new ListTasksCommand({ cluster: this.config.clusterArn, desiredStatus: 'RUNNING', ...(sandboxId ? { startedBy: sandboxId } : {}), nextToken }),
      );
      arns.push(...(out.taskArns ?? []));
      nextToken = out.nextToken;
      if (!nextToken) break;
    }
    if (!arns.length) return [];
    return (await this.describe(arns)).flatMap((task) => {
      const env = envOf(task);
      const generation = Number(env.SANDBOX_GENERATION);
      if (!task.taskArn || !task.startedBy || !Number.isInteger(generation)) return [];
      return [{ taskArn: task.taskArn, sandboxId: task.startedBy, generation, mode: env.SANDBOX_MODE ?? 'run', lastStatus: task.lastStatus }];
    });
  }
}
