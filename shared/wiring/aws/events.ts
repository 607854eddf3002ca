import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const eventStore: Builder<'eventStore'> = () => new DynamoEventStore();
