import { getSandboxSpecs } from '#shared/sandbox-specs/operations.ts';
import { awsRoute, specs } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getSandboxSpecs, { specs });
