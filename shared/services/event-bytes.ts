import type { OrgEventBytes } from '#shared/events/org-bytes.ts';
import type { ServiceFactory } from '#shared/services.ts';

/** The sweeper's sum of stored event bytes per organization: the adapter itself (no logic of its own). */
export const eventBytes: ServiceFactory<OrgEventBytes> = (c) => c.adapter('orgEventBytes');
