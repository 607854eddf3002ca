import { acceptInvitation } from '#shared/accounts/operations.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  acceptInvitation,
  { accountStore, auditStore, sandboxStore, sandboxRuntime, sandboxConfig, prices, usageStore, specs },
  { organizations },
);
