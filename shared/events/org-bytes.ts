/**
 * Stored event bytes per organization (the plan's `max_event_bytes_per_org`): ingest counts each
 * conversation's bytes on its counter; this sums what grew since the last run into each organization's
 * total and writes that total on the grown counters, where ingest reads it. Adapter: `DynamoOrgEventBytes`.
 */
export interface OrgEventBytes {
  /** One run: at most `maxConversations` grown counters (the rest wait for the next). */
  sweep(maxConversations?: number): Promise<{ conversations: number; organizations: number }>;
}
