import type { OrgEventBytes } from '#shared/events/org-bytes.ts';
import type { Accounts } from '#shared/accounts/accounts.ts';
import type { AccountExport } from '#shared/accounts/export.ts';
import type { AccountDeletion, AccountPurge } from '#shared/accounts/deletion.ts';
import type { Audit, AuditLog } from '#shared/accounts/audit.ts';
import type { Organizations } from '#shared/accounts/organizations.ts';
import type { ApiKeys } from '#shared/auth/api-keys.ts';
import type { OidcVerifier } from '#shared/auth/oidc.ts';
import type { RateLimiter } from '#shared/auth/rate-limit.ts';
import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { Sessions } from '#shared/auth/sessions.ts';
import type { ConversationBridge } from '#shared/conversations/bridge.ts';
import type { ConversationService } from '#shared/conversations/service.ts';
import type { LegacyConversationService } from '#shared/conversations/legacy-service.ts';
import type { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import type { EventService } from '#shared/events/service.ts';
import type { Idempotency } from '#shared/http/idempotency.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import type { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import type { SandboxBridge } from '#shared/sandboxes/bridge-service.ts';
import type { SandboxHousekeeping } from '#shared/sandboxes/housekeeping.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';
import type { WarmPool } from '#shared/sandboxes/pool.ts';
import type { WorkspaceReads } from '#shared/sandboxes/workspace-reads.ts';
import type { PoolClaims } from '#shared/sandboxes/pool-claim.ts';
import type { SettingsService } from '#shared/settings/service.ts';
import type { StreamAccess } from '#shared/stream/access.ts';
import type { StreamTickets } from '#shared/stream/tickets.ts';
import type { Credits } from '#shared/usage/credits.ts';
import type { UsageService } from '#shared/usage/service.ts';
import type { BillingExports } from '#shared/billing/export.ts';
import type { BillingCustomers } from '#shared/billing/customers.ts';
import type { StripeReporter } from '#shared/billing/stripe.ts';
import type { UsageReconcile } from '#shared/usage/reconcile.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';
import type { LlmGateway } from '#shared/llm/gateway.ts';
import { WiringError, type AdapterName, type Adapters } from '#shared/wiring/adapters.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** What operations use. A function gets those its entry names (`servicesOf`), over its own adapters (AWS or local). */
export interface Services {
  apiKeys: ApiKeys;
  /** A person's own data, paged (`GET /api/v1/users/me/export`). */
  accountExport: AccountExport;
  /** `DELETE /api/v1/users/me`, and the daily removal of a deleted account's data. */
  accountDeletion: AccountDeletion;
  accountPurge: AccountPurge;
  sessions: Sessions;
  conversationKeys: ConversationKeys;
  settings: SettingsService;
  cursors: CursorCodec;
  /** Conversations, by audience: the user's V1 API, its legacy API, the bridge the sandbox calls, housekeeping. */
  conversations: ConversationService;
  legacyConversations: LegacyConversationService;
  conversationBridge: ConversationBridge;
  conversationHousekeeping: ConversationHousekeeping;
  events: EventService;
  /** Stored event bytes summed per organization (the sweeper). */
  eventBytes: OrgEventBytes;
  /** Sandboxes, by audience: the user's API, the bridge the sandbox program calls, housekeeping. */
  sandboxes: SandboxService;
  sandboxBridge: SandboxBridge;
  sandboxHousekeeping: SandboxHousekeeping;
  /** Reads of a conversation's workspace: over the bridge (a request/reply command), or a paused sandbox's snapshot. */
  workspaceReads: WorkspaceReads;
  /** The warm pool: claims (through the sandbox services), the standbys' own routes, refill and sweep. */
  warmPool: WarmPool;
  /** The pool's claim alone, what the functions that start sandboxes name (shared/services/sandbox-deps.ts). */
  poolClaims: PoolClaims;
  sandboxSpecs: SandboxSpecService;
  streamTickets: StreamTickets;
  /** Who may open which conversation's stream (the local upgrade, the AWS `$connect`). */
  streamAccess: StreamAccess;
  /** Answers repeats of an idempotent create (the wrapper calls it on routes declared `idempotent: true`). */
  idempotency: Idempotency;
  /** People and their organizations (the authorizer's view of a caller). */
  accounts: Accounts;
  /** The audit log's writer. */
  audit: Audit;
  auditLog: AuditLog;
  /** Organizations, members, invitations, operator actions. */
  organizations: Organizations;
  /** The usage ledger's totals for `GET /api/v1/usage`. */
  usage: UsageService;
  /** The FOCUS export of the ledger (the daily schedule, the operators' route). */
  billingExports: BillingExports;
  /** Operators map organizations to Stripe customers. */
  billingCustomers: BillingCustomers;
  /** The Stripe adapter's report runs (docs/billing.md, "Stripe"). */
  stripeReports: StripeReporter;
  /** The daily reconcile: totals from their records, running-slot and conversation counters recounted. */
  usageReconcile: UsageReconcile;
  /** Operators' grants of prepaid credits. */
  credits: Credits;
  /** Platform models: which exist, which the caller's plan allows. */
  platformLlms: PlatformLlmPolicy;
  /** The LLM gateway (not an HTTP API route: a streaming function, shared/routes.ts `llmGatewayRoute`). */
  llmGateway: LlmGateway;
  /** The console's OpenID sign-in: the issuer's verifier (null without one) and the attempt limits. */
  oidcSignIn: { verifier: OidcVerifier | null; limiter: RateLimiter };
}
export type ServiceName = keyof Services;

/** What a service factory builds with: its function's adapters, and the other services it is built on. */
export interface ServiceContext {
  /** The adapter, built when one of its members is first used (so building a service builds no adapter). */
  adapter<K extends AdapterName>(name: K): Adapters[K];
  /** The adapters as they are, for plain values and functions read when first called. */
  adapters: Adapters;
  /** Another service, built once per function, whether its entry names it or not. */
  use<T>(factory: ServiceFactory<T>): T;
  /**
   * A service when the function's entry names it, else undefined: for an optional part a service
   * uses only where declared (the warm pool in the functions that start sandboxes), so the other
   * bundles carry none of its code.
   */
  named<K extends ServiceName>(name: K): Services[K] | undefined;
}
/**
 * How one service is built. Each factory is a module of its own under shared/services/, the one
 * place that says which adapters and services each service is built on: a bundle carries only the
 * factories its entry imports, their classes, and what those import (not every service's models).
 */
export type ServiceFactory<T> = (c: ServiceContext) => T;
/** The services an entry names, by the name operations read them under. */
export type ServiceFactories = { [K in ServiceName]?: ServiceFactory<Services[K]> };

/**
 * An object standing for an adapter that is built when one of its members is first used. So a
 * service built with every store it could use builds only those the called method touches: listing
 * conversations never builds the start-task store, reading masked settings never builds the sealer.
 */
function deferred<T extends object>(get: () => T): T {
  let target: T | undefined;
  const resolve = () => (target ??= get());
  return new Proxy({} as T, {
    get: (_, prop) => {
      const value: unknown = Reflect.get(resolve(), prop);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(resolve()) : value;
    },
    has: (_, prop) => Reflect.has(resolve(), prop),
  });
}

/** Every service name, so a service the entry does not name is refused by name (the compiler keeps the list whole). */
const serviceNames: Record<ServiceName, true> = {
  apiKeys: true,
  accountExport: true,
  accountDeletion: true,
  accountPurge: true,
  sessions: true,
  conversationKeys: true,
  settings: true,
  cursors: true,
  conversations: true,
  legacyConversations: true,
  conversationBridge: true,
  conversationHousekeeping: true,
  events: true,
  eventBytes: true,
  sandboxes: true,
  sandboxBridge: true,
  sandboxHousekeeping: true,
  workspaceReads: true,
  warmPool: true,
  poolClaims: true,
  sandboxSpecs: true,
  streamTickets: true,
  streamAccess: true,
  idempotency: true,
  accounts: true,
  audit: true,
  auditLog: true,
  organizations: true,
  oidcSignIn: true,
  usage: true,
  billingExports: true,
  billingCustomers: true,
  stripeReports: true,
  usageReconcile: true,
  credits: true,
  platformLlms: true,
  llmGateway: true,
};

/**
 * The services of one function: those its entry names (`factories`), each built on first use over
 * the function's adapters (`wire`, which holds every build and call to its declaration), with the
 * services they are built on. A service the entry does not name throws a WiringError.
 */
export function servicesOf(fn: string, adapters: Adapters, factories: ServiceFactories): Services {
  const built = new Map<ServiceFactory<unknown>, unknown>();
  const context: ServiceContext = {
    adapter: (name) => deferred(() => adapters[name] as Adapters[typeof name] & object),
    adapters,
    use: <T>(factory: ServiceFactory<T>): T => {
      if (!built.has(factory)) built.set(factory, factory(context));
      return built.get(factory) as T;
    },
    named: (name) => {
      const factory = factories[name] as ServiceFactory<Services[typeof name]> | undefined;
      return factory ? context.use(factory) : undefined;
    },
  };
  const build = (name: ServiceName) => {
    const factory = factories[name] as ServiceFactory<unknown> | undefined;
    if (!factory)
      throw new WiringError(
        `${fn}: its entry does not name the ${name} service (add it to the services the entry passes)`,
      );
    return context.use(factory);
  };
  return lazy(
    Object.fromEntries((Object.keys(serviceNames) as ServiceName[]).map((name) => [name, () => build(name)])) as {
      [K in ServiceName]: () => Services[K];
    },
  );
}
