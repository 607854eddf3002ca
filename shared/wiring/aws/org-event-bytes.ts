import { DynamoOrgEventBytes } from '#shared/events/dynamo-org-bytes.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const orgEventBytes: Builder<'orgEventBytes'> = () => new DynamoOrgEventBytes();
