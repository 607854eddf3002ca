import { removeMember } from '#shared/accounts/operations.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { streamEviction } from '#shared/wiring/aws/stream-eviction.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  removeMember,
  {
    accountStore,
    auditStore,
    streamEviction,
    keyStore,
    sandboxStore,
    sandboxRuntime,
    sandboxConfig,
    prices,
    usageStore,
    specs,
  },
  { organizations },
);
