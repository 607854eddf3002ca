import { createHash } from 'node:crypto';
import {
  DescribeTaskDefinitionCommand,
  type ECSClient,
  RegisterTaskDefinitionCommand,
  type ContainerDefinition,
  type TaskDefinition,
} from '@aws-sdk/client-ecs';
import { logger } from '#shared/logging.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import { isUnknownDefinition } from '#shared/sandboxes/runtime/fargate-errors.ts';
import { SandboxStartError, type LaunchOptions } from '#shared/sandboxes/runtime/sandbox-runtime.ts';

/** The container that runs the program in every sandbox task definition (RunTask overrides address it by name). */
export const SANDBOX_CONTAINER = 'sandbox';
/** A base image's task: the init container that copies our program (and its Node) into a volume the sandbox container runs it from. */
export const PROGRAM_CONTAINER = 'sandbox-program';
export const PROGRAM_VOLUME = 'sandbox-program';
export const PROGRAM_DIR = '/opt/acs';

/** The roles an image's task definition is registered with when the spec's own names none. */
export interface DefinitionRoles {
  taskRoleArn: string;
  executionRoleArn: string;
}

/**
 * The task definitions of a user's images: one per spec and distinct image (registered on first use,
 * found again by its family name afterwards, never per sandbox), made from the spec's own (registered
 * by the CDK app) with the image replaced.
 */
export class ImageTaskDefinitions {
  private readonly definitions = new Map<string, Promise<TaskDefinition>>();
  private readonly imageDefinitions = new Map<string, Promise<string>>();

  constructor(
    private readonly ecs: ECSClient,
    private readonly roles: DefinitionRoles,
  ) {}

  /**
   * The task definition of the spec with a user's image: found by its family (the spec's family,
   * the image kind and a hash of the image), registered when it does not exist yet. Revisions are
   * registered once per image (twice at worst, when two first starts race), never per sandbox.
   */
  arnOf(fargate: NonNullable<SandboxSpec['fargate']>, image: NonNullable<LaunchOptions['image']>): Promise<string> {
    const family = `${fargate.family}-${image.kind}-${createHash('sha256').update(image.uri).digest('hex').slice(0, 16)}`;
    let found = this.imageDefinitions.get(family);
    if (!found) {
      found = (async () => {
        try {
          const existing = await this.ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: family }));
          if (existing.taskDefinition?.status === 'ACTIVE' && existing.taskDefinition.taskDefinitionArn)
            return existing.taskDefinition.taskDefinitionArn;
        } catch (err) {
          if (!isUnknownDefinition(err)) throw err;
        }
        const base = await this.definition(fargate.taskDefinitionArn);
        const main = (base.containerDefinitions ?? []).find((c) => c.name === SANDBOX_CONTAINER);
        if (!main?.image)
          throw new SandboxStartError(
            `Task definition ${fargate.taskDefinitionArn} has no "${SANDBOX_CONTAINER}" container`,
          );
        const out = await this.ecs.send(
          new RegisterTaskDefinitionCommand({
            family,
            taskRoleArn: base.taskRoleArn ?? this.roles.taskRoleArn,
            executionRoleArn: base.executionRoleArn ?? this.roles.executionRoleArn,
            networkMode: 'awsvpc',
            requiresCompatibilities: ['FARGATE'],
            cpu: base.cpu,
            memory: base.memory,
            runtimePlatform: base.runtimePlatform,
            ephemeralStorage: base.ephemeralStorage,
            containerDefinitions:
              image.kind === 'runtime' ? [{ ...main, image: image.uri }] : baseImageContainers(main, image.uri),
            volumes: [...(base.volumes ?? []), ...(image.kind === 'base' ? [{ name: PROGRAM_VOLUME }] : [])],
          }),
        );
        const arn = out.taskDefinition?.taskDefinitionArn;
        if (!arn) throw new Error('RegisterTaskDefinition returned no ARN');
        logger.info('sandbox.image-definition', { family, kind: image.kind });
        return arn;
      })();
      found.catch(() => this.imageDefinitions.delete(family));
      this.imageDefinitions.set(family, found);
    }
    return found;
  }

  /** A task definition of the deployment's, described once per container (they change only with a deployment). */
  private definition(arn: string): Promise<TaskDefinition> {
    let found = this.definitions.get(arn);
    if (!found) {
      found = this.ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: arn })).then((out) => {
        if (!out.taskDefinition) throw new Error(`Task definition ${arn} not found`);
        return out.taskDefinition;
      });
      found.catch(() => this.definitions.delete(arn));
      this.definitions.set(arn, found);
    }
    return found;
  }
}

/**
 * A base image's containers: our image's program and Node copied into a task-local volume by a
 * non-essential init container, then the user's image running them (it needs glibc: Node does not
 * run on musl; bash and git are checked by the program, SANDBOX_IMAGE_CHECK).
 */
function baseImageContainers(main: ContainerDefinition, uri: string): ContainerDefinition[] {
  const mount = { sourceVolume: PROGRAM_VOLUME, containerPath: PROGRAM_DIR };
  return [
    {
      name: PROGRAM_CONTAINER,
      image: main.image,
      essential: false,
      user: '0',
      command: ['sh', '-c', `cp "$(command -v node)" /app/main.mjs ${PROGRAM_DIR}/`],
      mountPoints: [{ ...mount, readOnly: false }],
      logConfiguration: main.logConfiguration,
    },
    {
      ...main,
      image: uri,
      command: [`${PROGRAM_DIR}/node`, `${PROGRAM_DIR}/main.mjs`],
      mountPoints: [...(main.mountPoints ?? []), { ...mount, readOnly: true }],
      dependsOn: [{ containerName: PROGRAM_CONTAINER, condition: 'SUCCESS' }],
      environment: [...(main.environment ?? []), { name: 'NODE_ENV', value: 'production' }],
    },
  ];
}
