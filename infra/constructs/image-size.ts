import type { DockerImageAsset } from 'aws-cdk-lib/aws-ecr-assets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import {
  AwsCustomResource,
  AwsCustomResourcePolicy,
  type AwsSdkCall,
  Logging,
  PhysicalResourceId,
} from 'aws-cdk-lib/custom-resources';
import { Stack, Validations } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/** The id AwsCustomResource gives its provider function (a singleton per stack, aws-cdk-lib's own). */
const PROVIDER_ID = 'AWS679f53fac002430cb0da5b7982bd2287';

/**
 * The sandbox image's compressed size as ECR stores it, read at deploy time: the image is built and
 * pushed by `cdk deploy` (cdk-assets) before the stack's resources change, and the base image cannot be
 * pulled where this was written, so the size is known only in a deployment. One ECR `DescribeImages` call
 * of the image's tag (`imageSizeInBytes`: the sum of its compressed layers, as Fargate pulls them; for a
 * manifest list, the largest manifest's), made again whenever the tag (the asset's hash) changes. Read it
 * from the stack output `SandboxImageCompressedBytes`: below 250 MB the zstd layers stay, above it a SOCI
 * index pays instead (docs/deploy.md, "The sandbox image").
 *
 * A custom resource (AwsCustomResource: one Lambda of CDK's own, run only at deploys) because no construct
 * builds this image: a deploy-time build (`@cdklabs/deploy-time-build`) would expose its own outputs, but the
 * image is a plain DockerImageAsset. Its role may call `ecr:DescribeImages` on the assets repository alone.
 */
export class ImageSize extends Construct {
  /** The compressed size in bytes (a token, resolved at deploy time). */
  readonly bytes: string;

  constructor(scope: Construct, id: string, props: { image: DockerImageAsset; logGroup: ILogGroup }) {
    super(scope, id);
    const { image } = props;
    const describe: AwsSdkCall = {
      service: 'ECR',
      action: 'describeImages',
      parameters: { repositoryName: image.repository.repositoryName, imageIds: [{ imageTag: image.imageTag }] },
      physicalResourceId: PhysicalResourceId.of(image.imageTag),
      outputPaths: ['imageDetails.0.imageSizeInBytes'],
      // A repository name, a tag and a size: nothing secret, but nothing worth logging either.
      logging: Logging.withDataHidden(),
    };
    const resource = new AwsCustomResource(this, 'Describe', {
      resourceType: 'Custom::SandboxImageSize',
      onCreate: describe,
      onUpdate: describe,
      policy: AwsCustomResourcePolicy.fromStatements([
        new PolicyStatement({ actions: ['ecr:DescribeImages'], resources: [image.repository.repositoryArn] }),
      ]),
      // The SDK in the Lambda runtime: no download from npm at deploy time.
      installLatestAwsSdk: false,
      logGroup: props.logGroup,
      // One small SDK call: Lambda's smallest useful size, set rather than defaulted.
      memorySize: 256,
    });
    this.bytes = resource.getResponseField('imageDetails.0.imageSizeInBytes');
    // CDK's provider function (one per stack, made by AwsCustomResource): its findings, each with why.
    const provider = Stack.of(this).node.findChild(PROVIDER_ID);
    const ack = (scope: Construct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });
    ack(
      provider.node.findChild('ServiceRole'),
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      "CDK's AwsCustomResource provider: the basic execution policy lets it write its log lines; its one other grant is ecr:DescribeImages on the assets repository.",
    );
    ack(
      provider,
      'Serverless-LambdaDLQ',
      'Invoked by CloudFormation at deploys only, which waits for its answer and fails the deploy on an error: there is no asynchronous event to keep.',
    );
    ack(
      provider,
      'Serverless-LambdaTracing',
      'One DescribeImages call at deploys; its log line and the stack event say what it did, a trace would add nothing.',
    );
  }
}
