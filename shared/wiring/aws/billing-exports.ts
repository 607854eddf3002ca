import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** The operator's bucket of billing exports (infra/constructs/billing-exports.ts): one PutObject per run. */
export const billingExports: Builder<'billingExports'> = () => {
  const bucket = requireEnv('BILLING_EXPORT_BUCKET', 'the S3 bucket of billing exports');
  const s3 = new S3Client({});
  return {
    async put(key, body) {
      await s3.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'text/csv; charset=utf-8' }),
      );
      return `s3://${bucket}/${key}`;
    },
  };
};
