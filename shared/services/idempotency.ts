import { Idempotency } from '#shared/http/idempotency.ts';
import { defineService } from '#shared/services.ts';

/** The sealer is built only by a route whose stored answers are sealed (one that manages credentials). */
export const idempotency = defineService(
  { adapters: ['idempotencyStore', 'sealer'] },
  (c) => new Idempotency(c.adapter('idempotencyStore'), () => c.adapters.sealer),
);
