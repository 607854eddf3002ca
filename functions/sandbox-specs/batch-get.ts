import { getSandboxSpecs } from '#shared/sandbox-specs/operations.ts';
import { sandboxSpecs } from '#shared/services/sandbox-specs.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getSandboxSpecs, { sandboxSpecs });
