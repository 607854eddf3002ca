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
import type { ConversationCommands } from '#shared/conversations/commands.ts';
import type { ConversationReads } from '#shared/conversations/reads.ts';
import type { ConversationStart } from '#shared/conversations/start.ts';
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
import { isWired, WiringError, type AdapterName, type Adapters } from '#shared/wiring/adapters.ts';
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
  /** Conversations, by use: the V1 API's and agent-server routes' reads, commands and starts; the legacy API; the bridge the sandbox calls; housekeeping. */
  conversationReads: ConversationReads;
  conversationCommands: ConversationCommands;
  conversationStarts: ConversationStart;
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

/** A service's factory, of any service, over any adapters (what `uses` lists). */
export type AnyServiceFactory = ServiceFactory<unknown, any, any>;

/**
 * What a service factory builds with: the adapters it declares (`A`) and the services it declares
 * it is built on (`U`). Anything else is a compile error; outside Lambda `adapter` and `use` also
 * refuse it with a WiringError.
 */
export interface ServiceContext<A extends AdapterName = AdapterName, U extends AnyServiceFactory = AnyServiceFactory> {
  /** The adapter, built now. One the function's route does not grant is absent: outside Lambda a stand-in refusing its first use, in a bundle undefined. */
  adapter<K extends A>(name: K): Adapters[K];
  /** The adapters as they are, for plain values and functions read when first called. */
  adapters: Pick<Adapters, A>;
  /** Another service, built once per function, whether its entry names it or not. */
  use<F extends U>(factory: F): ReturnType<F['build']>;
  /**
   * A service when the function's entry names it, else undefined: for an optional part a service
   * uses only where declared (the warm pool in the functions that start sandboxes), so the other
   * bundles carry none of its code.
   */
  named<K extends ServiceName>(name: K): Services[K] | undefined;
}

/**
 * How one service is built, and what with, as data: the adapters it may touch and the services it is
 * built on. A function's adapters are derived from the services its entry names (`adaptersOf`), so an
 * entry names only its operation and services. Each factory is a module of its own under
 * shared/services/: a bundle carries only the factories its entry imports, their classes, and what
 * those import (not every service's models).
 */
export interface ServiceFactory<
  T,
  A extends AdapterName = AdapterName,
  U extends AnyServiceFactory = AnyServiceFactory,
> {
  readonly adapters: readonly A[];
  readonly uses: readonly U[];
  readonly build: (c: ServiceContext<A, U>) => T;
}

/** A service's factory, declaring its adapters and the services it is built on (both typed: its `build` can reach no others). */
export function defineService<const A extends AdapterName, T, const U extends readonly AnyServiceFactory[] = []>(
  declaration: { adapters: readonly A[]; uses?: U },
  build: (c: ServiceContext<A, U[number]>) => T,
): ServiceFactory<T, A, U[number]> {
  return { adapters: declaration.adapters, uses: declaration.uses ?? ([] as unknown as U), build };
}

/** The services an entry names, by the name operations read them under. */
export type ServiceFactories = { [K in ServiceName]?: ServiceFactory<Services[K], AdapterName, AnyServiceFactory> };

/** Every adapter the given services may touch, with the services they are built on: what a function's adapters are derived from. */
export function adaptersOf(factories: Iterable<AnyServiceFactory>): Set<AdapterName> {
  const seen = new Set<AnyServiceFactory>();
  const out = new Set<AdapterName>();
  const visit = (f: AnyServiceFactory) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const a of f.adapters) out.add(a);
    for (const u of f.uses) visit(u);
  };
  for (const f of factories) visit(f);
  return out;
}

/**
 * What a service gets for a declared adapter its function does not have (its route does not grant it):
 * outside Lambda, an object that refuses any use with a WiringError naming both; in a Lambda bundle,
 * nothing (the static wiring test and the tier hold the deployed path), so no Proxy is there.
 */
function absent(fn: string, name: AdapterName): never {
  if (process.env.ACS_LAMBDA_BUNDLE === 'true') return undefined as never;
  return new Proxy({} as never, {
    get: (_, prop) => {
      throw new WiringError(
        `${fn}: used ${name}.${String(prop)}, an adapter its declaration does not grant (add its needs to the declaration)`,
      );
    },
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
  conversationReads: true,
  conversationCommands: true,
  conversationStarts: true,
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
 * the function's adapters (`wire`, which outside Lambda holds every build and call to its
 * declaration), with the services they are built on. A service the entry does not name throws a
 * WiringError. `c.named` reaches a service the entry names by name, undeclared: the pool's claim,
 * which only the functions that start sandboxes name (shared/services/sandbox-deps.ts).
 */
export function servicesOf(fn: string, adapters: Adapters, factories: ServiceFactories): Services {
  const built = new Map<AnyServiceFactory, unknown>();
  const refuse = (what: string): never => {
    throw new WiringError(`${fn}: ${what}`);
  };
  const use = (factory: AnyServiceFactory): unknown => {
    if (!built.has(factory)) built.set(factory, factory.build(contextOf(factory)));
    return built.get(factory);
  };
  // Each factory's own context: outside Lambda it refuses what the factory does not declare.
  const contextOf = (factory: AnyServiceFactory): ServiceContext => ({
    adapter: (name) => {
      // Written out (not a constant) so that esbuild's define folds it: a bundle carries neither check.
      if (process.env.ACS_LAMBDA_BUNDLE !== 'true' && !factory.adapters.includes(name))
        refuse(`a service used the ${name} adapter, which its factory does not declare`);
      return isWired(adapters, name) ? adapters[name] : absent(fn, name);
    },
    adapters,
    use: ((f: AnyServiceFactory) => {
      if (process.env.ACS_LAMBDA_BUNDLE !== 'true' && !factory.uses.includes(f))
        refuse('a service used a service its factory does not declare in `uses`');
      return use(f);
    }) as ServiceContext['use'],
    named: (name) => {
      const f = factories[name] as AnyServiceFactory | undefined;
      return f ? (use(f) as Services[typeof name]) : undefined;
    },
  });
  const build = (name: ServiceName) => {
    const factory = factories[name] as AnyServiceFactory | undefined;
    if (!factory)
      return refuse(`its entry does not name the ${name} service (add it to the services the entry passes)`);
    return use(factory);
  };
  return lazy(
    Object.fromEntries((Object.keys(serviceNames) as ServiceName[]).map((name) => [name, () => build(name)])) as {
      [K in ServiceName]: () => Services[K];
    },
  );
}
