import { deleteMyAccount } from '#shared/accounts/operations.ts';
import { accountDeletion } from '#shared/services/account-deletion.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { snapshotRemoval } from '#shared/wiring/aws/snapshot-removal.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { streamEviction } from '#shared/wiring/aws/stream-eviction.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  deleteMyAccount,
  {
    accountStore,
    auditStore,
    keyStore,
    streamEviction,
    sandboxStore,
    sandboxRuntime,
    sandboxConfig,
    snapshotRemoval,
    specs,
    prices,
    usageStore,
  },
  { accountDeletion },
);
