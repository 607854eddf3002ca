import { searchSandboxes } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(searchSandboxes, { sandboxStore, sealer, cursorKey }, { sandboxes });
