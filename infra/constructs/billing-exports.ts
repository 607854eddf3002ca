import { CfnOutput, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * The operator's billing exports (docs/billing.md): a private, encrypted bucket of FOCUS files (retained:
 * they are what invoices were made from), and the daily schedule of the export function. The functions
 * that write hold `s3:PutObject` on its `focus-1.2/` prefix only (infra/iam.ts, capability billing:export).
 */
export class BillingExports extends Construct {
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // A re-run replaces a period's file: the versions keep what was there before (an invoice made from it).
      versioned: true,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [{ id: 'old-versions', noncurrentVersionExpiration: Duration.days(400) }],
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Written only by the export functions (one PutObject per run, logged by them) and read by the operator; server access logs would bill a second bucket for the same record.',
    });
    new CfnOutput(this, 'BucketName', {
      value: this.bucket.bucketName,
      description: 'S3 bucket of the billing exports (FOCUS 1.2 CSV under focus-1.2/; retained)',
    });
  }

  /** Runs `fn` every day at 00:15 UTC (the previous day is complete by then); the event's `time` names the day. */
  scheduleDaily(fn: IFunction, failures: IQueue): Rule {
    return new Rule(this, 'Daily', {
      description: "Billing export: the previous UTC day's usage ledger as a FOCUS 1.2 file",
      schedule: Schedule.cron({ minute: '15', hour: '0' }),
      targets: [
        new LambdaFunction(fn, { deadLetterQueue: failures, retryAttempts: 4, maxEventAge: Duration.hours(12) }),
      ],
    });
  }
}
