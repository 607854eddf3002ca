import { getSandboxSpecs } from '#shared/sandbox-specs/operations.ts';
import { sandboxSpecs } from '#shared/services/sandbox-specs.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

export const handler = awsRoute(getSandboxSpecs, { specs }, { sandboxSpecs });
