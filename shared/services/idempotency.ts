import { Idempotency } from '#shared/http/idempotency.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const idempotency: ServiceFactory<Idempotency> = (c) => new Idempotency(c.adapter('idempotencyStore'));
