import type { ServiceFactories } from '#shared/services.ts';
import { accountDeletion } from '#shared/services/account-deletion.ts';
import { accountPurge } from '#shared/services/account-purge.ts';
import { accountExport } from '#shared/services/account-export.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { audit } from '#shared/services/audit.ts';
import { auditLog } from '#shared/services/audit-log.ts';
import { oidcSignIn } from '#shared/services/oidc-sign-in.ts';
import { organizations } from '#shared/services/organizations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { conversationHousekeeping } from '#shared/services/conversation-housekeeping.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { conversationCommands } from '#shared/services/conversation-commands.ts';
import { conversationReads } from '#shared/services/conversation-reads.ts';
import { conversationStarts } from '#shared/services/conversation-start.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { cursors } from '#shared/services/cursors.ts';
import { events } from '#shared/services/events.ts';
import { eventBytes } from '#shared/services/event-bytes.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { sandboxHousekeeping } from '#shared/services/sandbox-housekeeping.ts';
import { sandboxSpecs } from '#shared/services/sandbox-specs.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { sessions } from '#shared/services/sessions.ts';
import { settings } from '#shared/services/settings.ts';
import { streamAccess } from '#shared/services/stream-access.ts';
import { streamTickets } from '#shared/services/stream-tickets.ts';
import { usage } from '#shared/services/usage.ts';
import { billingExports } from '#shared/services/billing-exports.ts';
import { billingCustomers } from '#shared/services/billing-customers.ts';
import { stripeReports } from '#shared/services/stripe-reports.ts';
import { usageReconcile } from '#shared/services/usage-reconcile.ts';
import { credits } from '#shared/services/credits.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { llmGateway } from '#shared/services/llm-gateway.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { workspaceReads } from '#shared/services/workspace-reads.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';

/** Every factory: what the local stack's process-wide services are built from (no Lambda entry imports it). */
export const allServices: Required<ServiceFactories> = {
  apiKeys,
  sessions,
  conversationKeys,
  settings,
  cursors,
  sandboxSpecs,
  sandboxes,
  sandboxBridge,
  sandboxHousekeeping,
  workspaceReads,
  warmPool,
  poolClaims,
  conversationReads,
  conversationCommands,
  conversationStarts,
  legacyConversations,
  conversationBridge,
  conversationHousekeeping,
  events,
  eventBytes,
  streamTickets,
  streamAccess,
  idempotency,
  accounts,
  accountExport,
  accountDeletion,
  accountPurge,
  audit,
  auditLog,
  organizations,
  oidcSignIn,
  usage,
  billingExports,
  billingCustomers,
  stripeReports,
  usageReconcile,
  credits,
  platformLlms,
  llmGateway,
};
