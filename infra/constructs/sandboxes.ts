import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  FlowLogTrafficType,
  FlowLogDestination,
  GatewayVpcEndpointAwsService,
  SecurityGroup,
  SubnetType,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import { Platform, DockerImageAsset } from 'aws-cdk-lib/aws-ecr-assets';
import {
  Cluster,
  ContainerImage,
  CpuArchitecture,
  FargateTaskDefinition,
  LinuxParameters,
  LogDrivers,
  OperatingSystemFamily,
} from 'aws-cdk-lib/aws-ecs';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership, StorageClass } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { REPO_ROOT } from '#infra/bundle.ts';
import type { Config } from '#infra/config.ts';
import { SANDBOX_CONTAINER } from '#shared/sandboxes/runtime/fargate-task-definitions.ts';

/**
 * How `cdk deploy` builds the sandbox image (cdk-assets passes it to `docker build --output`): zstd
 * layers, which Fargate unpacks faster than gzip (AWS measured up to 27 % shorter task starts), while the
 * compressed image stays under the 250 MB above which lazy loading (a SOCI index) pays instead
 * (docs/deploy.md, "The sandbox image"). `force-compression` recompresses the base image's gzip layers
 * too; OCI media types are what zstd layers need. cdk-assets then tags and pushes the built image: its
 * zstd blobs reach ECR only from Docker's containerd image store (the classic store pushes gzip).
 */
export const SANDBOX_IMAGE_OUTPUT =
  'type=image,oci-mediatypes=true,compression=zstd,compression-level=3,force-compression=true';

/**
 * Everything a sandbox runs on, none of it billed while no sandbox runs: a VPC with public subnets
 * only (no NAT gateway; tasks get a public IP for outbound traffic), a security group with no
 * ingress, an ECS cluster with no services (only the Fargate capacity providers), one Fargate task
 * definition per configured spec (a user's image gets its own, registered at run time on first use),
 * and the bucket of workspace snapshots. There is no shared file system: a task's workspace is its
 * own disk, restored from and saved to its sandbox's prefix through presigned requests.
 */
export class SandboxInfra extends Construct {
  readonly vpc: Vpc;
  readonly securityGroup: SecurityGroup;
  readonly cluster: Cluster;
  readonly workspaces: Bucket;
  readonly taskRole: Role;
  readonly executionRole: Role;
  /** The sandbox image, built and pushed by `cdk deploy` (its compressed size: infra/constructs/image-size.ts). */
  readonly image: DockerImageAsset;
  readonly familyPrefix: string;
  readonly taskDefinitions: {
    spec: Config['sandboxSpecs'][number];
    spot: boolean;
    taskDefinition: FargateTaskDefinition;
  }[] = [];

  constructor(scope: Construct, id: string, props: { config: Config; retention: RetentionDays }) {
    super(scope, id);
    const { config } = props;

    this.vpc = new Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: SubnetType.PUBLIC, cidrMask: 22 }],
      // Free: keeps DynamoDB and S3 (ECR image layers) traffic off the internet path.
      gatewayEndpoints: {
        DynamoDb: { service: GatewayVpcEndpointAwsService.DYNAMODB },
        S3: { service: GatewayVpcEndpointAwsService.S3 },
      },
      flowLogs: {
        // Rejected traffic only: the signal worth keeping, billed per byte ingested.
        rejected: {
          trafficType: FlowLogTrafficType.REJECT,
          destination: FlowLogDestination.toCloudWatchLogs(
            new LogGroup(this, 'FlowLogs', { retention: props.retention, removalPolicy: RemovalPolicy.DESTROY }),
          ),
        },
      },
    });

    // Sandboxes connect out (to the control plane, the LLM, git hosts); nothing connects in.
    this.securityGroup = new SecurityGroup(this, 'SandboxSecurityGroup', {
      vpc: this.vpc,
      description: 'Sandbox tasks: outbound only, no ingress',
      allowAllOutbound: true,
    });

    this.cluster = new Cluster(this, 'Cluster', { vpc: this.vpc, enableFargateCapacityProviders: true });

    // Workspace snapshots: reached only through URLs the control plane presigns for a sandbox's own
    // prefix (the task role holds nothing). Private, encrypted, TLS-only; a sandbox's objects are
    // deleted with it, and the lifecycle clears what a crash left behind.
    this.workspaces = new Bucket(this, 'WorkspaceSnapshots', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Long-paused sandboxes' snapshots are rarely read: cheaper storage after a month.
        {
          id: 'infrequent-access',
          transitions: [{ storageClass: StorageClass.INFREQUENT_ACCESS, transitionAfter: Duration.days(30) }],
        },
      ],
    });

    this.taskRole = new Role(this, 'TaskRole', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'Sandbox tasks: no permissions (a sandbox reaches AWS only through the control plane)',
    });
    this.executionRole = new Role(this, 'ExecutionRole', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'ECS agent for sandbox tasks: pulls the image, writes the logs',
    });

    this.image = new DockerImageAsset(this, 'Image', {
      directory: REPO_ROOT,
      file: 'sandbox/Dockerfile',
      platform: Platform.LINUX_ARM64,
      outputs: [SANDBOX_IMAGE_OUTPUT],
    });
    const image = this.image;
    const logGroup = new LogGroup(this, 'Logs', { retention: props.retention, removalPolicy: RemovalPolicy.DESTROY });

    this.familyPrefix = `${Stack.of(this).stackName}-sandbox-`;
    for (const spec of config.sandboxSpecs) {
      const taskDefinition = new FargateTaskDefinition(this, `Spec-${spec.id}`, {
        family: `${this.familyPrefix}${spec.id}`,
        cpu: spec.cpu,
        memoryLimitMiB: spec.memory,
        runtimePlatform: { cpuArchitecture: CpuArchitecture.ARM64, operatingSystemFamily: OperatingSystemFamily.LINUX },
        taskRole: this.taskRole,
        executionRole: this.executionRole,
      });
      taskDefinition.addContainer(SANDBOX_CONTAINER, {
        image: ContainerImage.fromDockerImageAsset(image),
        essential: true,
        // The spec's initial_env is passed at RunTask (container overrides), with the sandbox's own values.
        ...(spec.command ? { command: spec.command } : {}),
        workingDirectory: spec.workingDir,
        // SIGTERM, then 120 s (Fargate's maximum, Spot's notice) for the program's last workspace snapshot.
        stopTimeout: Duration.seconds(120),
        // An init process reaps the zombies agent shells leave behind.
        linuxParameters: new LinuxParameters(this, `Linux-${spec.id}`, { initProcessEnabled: true }),
        logging: LogDrivers.awsLogs({ logGroup, streamPrefix: spec.id }),
      });
      this.taskDefinitions.push({ spec, spot: spec.spot ?? config.sandboxSpot, taskDefinition });
    }
  }

  /** A variable of the sandbox program in every spec's task definition (per-sandbox revisions copy it). */
  setProgramEnvironment(name: string, value: string): void {
    for (const { taskDefinition } of this.taskDefinitions)
      taskDefinition.findContainer(SANDBOX_CONTAINER)!.addEnvironment(name, value);
  }

  /** The registry the sandbox-spec routes read: written into the functions' environment at deploy. */
  specRegistry(createdAt: string): object[] {
    return this.taskDefinitions.map(({ spec, spot, taskDefinition }) => ({
      id: spec.id,
      task_definition_arn: taskDefinition.taskDefinitionArn,
      family: taskDefinition.family,
      cpu: spec.cpu,
      memory: spec.memory,
      spot,
      spot_fallback: spec.spotFallback,
      command: spec.command,
      initial_env: spec.initialEnv,
      working_dir: spec.workingDir,
      ...(spec.warmPool ? { warmPool: spec.warmPool } : {}),
      created_at: createdAt,
    }));
  }
}
