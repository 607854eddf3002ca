import { defineService } from '#shared/services.ts';

/** The sweeper's sum of stored event bytes per organization: the adapter itself (no logic of its own). */
export const eventBytes = defineService({ adapters: ['orgEventBytes'] }, (c) => c.adapter('orgEventBytes'));
