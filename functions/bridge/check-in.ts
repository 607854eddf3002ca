import { sandboxCheckIn } from '#shared/sandboxes/bridge-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(sandboxCheckIn, { sandboxStore, sealer, sandboxConfig }, { sandboxBridge });
