/*
 * Every adapter's AWS builder, by adapter name: what `awsRoute` and `awsFunction` take a function's
 * adapters from (shared/wiring/aws.ts). A Lambda bundle does not carry this module: its build
 * replaces it with one that re-exports only the builders of that function's adapters
 * (infra/function-adapters.ts), so a bundle carries only those SDK clients. One builder per name,
 * one `export ... from` per line (infra/function-adapters.ts reads them as written).
 */
export { accountPurgeStore } from '#shared/wiring/aws/account-purge.ts';
export { accountStore, auditStore, auditReader, oidc, signInLimiter } from '#shared/wiring/aws/accounts.ts';
export { agentReports } from '#shared/wiring/aws/agent-reports.ts';
export { billingExports } from '#shared/wiring/aws/billing-exports.ts';
export { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
export { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
export { eventStore } from '#shared/wiring/aws/events.ts';
export { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
export { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
export { keyStore, cursorKey, conversationKeySecret, sessionStore } from '#shared/wiring/aws/keys.ts';
export { sealer } from '#shared/wiring/aws/kms.ts';
export { platformLlmKey } from '#shared/wiring/aws/llm-keys.ts';
export { platformModels, llmLedger } from '#shared/wiring/aws/llm.ts';
export { orgEventBytes } from '#shared/wiring/aws/org-event-bytes.ts';
export { origins } from '#shared/wiring/aws/origins.ts';
export { plans } from '#shared/wiring/aws/plans.ts';
export { poolDeadline } from '#shared/wiring/aws/pool-deadline.ts';
export { poolRefill } from '#shared/wiring/aws/pool-refill.ts';
export { poolStore } from '#shared/wiring/aws/pool.ts';
export { workspaceSnapshots, workspaceArchives } from '#shared/wiring/aws/s3.ts';
export { sandboxStore, sandboxConfig, bridgeUrl } from '#shared/wiring/aws/sandboxes.ts';
export { settingsStore } from '#shared/wiring/aws/settings.ts';
export { snapshotRemoval } from '#shared/wiring/aws/snapshot-removal.ts';
export { specs } from '#shared/wiring/aws/specs.ts';
export { streamEviction } from '#shared/wiring/aws/stream-eviction.ts';
export { streamResendTrigger } from '#shared/wiring/aws/stream-resend.ts';
export { streamTicketStore, streamConnectionStore, streamPush, eventFeed } from '#shared/wiring/aws/stream.ts';
export { stripeStore } from '#shared/wiring/aws/stripe-store.ts';
export { stripe } from '#shared/wiring/aws/stripe.ts';
export { usageBus } from '#shared/wiring/aws/usage-bus.ts';
export { usageStore, prices } from '#shared/wiring/aws/usage.ts';
