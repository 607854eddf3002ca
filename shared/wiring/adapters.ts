import type { OrgEventBytes } from '#shared/events/org-bytes.ts';
import type { AccountStore, AuditReader, AuditStore } from '#shared/accounts/account-store.ts';
import type { AccountPurgeStore } from '#shared/accounts/account-purge-store.ts';
import type { KeyStore } from '#shared/auth/key-store.ts';
import type { OidcVerifier } from '#shared/auth/oidc.ts';
import type { RateLimiter } from '#shared/auth/rate-limit.ts';
import type { SessionStore } from '#shared/auth/session-store.ts';
import type { ConversationStore, StartTaskStore } from '#shared/conversations/conversation-store.ts';
import type { EventStore } from '#shared/events/event-store.ts';
import type { Plans } from '#shared/plans/model.ts';
import type { Prices } from '#shared/usage/prices.ts';
import type { PlatformModels } from '#shared/llm/platform-models.ts';
import type { LlmLedger } from '#shared/llm/ledger.ts';
import type { UsageBus } from '#shared/usage/alerts.ts';
import type { AgentReports, UsageStore } from '#shared/usage/usage-store.ts';
import type { BillingExportSink } from '#shared/billing/export.ts';
import type { StripeMeterClient, StripeStore } from '#shared/billing/stripe.ts';
import type { IdempotencyStore } from '#shared/http/idempotency.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import type { PoolRefill } from '#shared/sandboxes/pool.ts';
import type { PoolDeadline } from '#shared/sandboxes/pool-claim.ts';
import type { PoolStore } from '#shared/sandboxes/pool-store.ts';
import type { SandboxConfig } from '#shared/sandboxes/config.ts';
import type { SandboxRuntime } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { SandboxStore } from '#shared/sandboxes/sandbox-store.ts';
import type { SnapshotRemoval } from '#shared/sandboxes/snapshots/snapshot-removal.ts';
import type { WorkspaceSnapshots } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';
import type { WorkspaceArchives } from '#shared/sandboxes/snapshots/workspace-archive.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import type { SettingsStore } from '#shared/settings/settings-store.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import type { ConnectionStore } from '#shared/stream/connection-store.ts';
import type { EventFeed } from '#shared/stream/feed.ts';
import type { ResendTrigger } from '#shared/stream/resend-trigger.ts';
import type { StreamEviction } from '#shared/stream/eviction.ts';
import type { StreamTicketStore } from '#shared/stream/ticket-store.ts';
import { lazy } from '#shared/wiring/lazy.ts';
import { uncovered, type Declaration, type Needs } from '#shared/wiring/needs.ts';

/** Every adapter a function may build, by name: what the AWS and the local wiring each provide. */
export interface Adapters {
  keyStore: KeyStore;
  settingsStore: SettingsStore;
  /** Seals and opens user secrets and the service's own keys. */
  sealer: Sealer;
  /** The key that signs page cursors: made on first use, kept sealed in the keys table. */
  cursorKey: () => Promise<Buffer>;
  /** Browser sign-in sessions, hashed, in the keys table under `session:<id>`. */
  sessionStore: SessionStore;
  /** The key that signs conversation-scoped keys: made on first use, kept sealed in the keys table. */
  conversationKeySecret: () => Promise<Buffer>;
  specs: SpecRegistry;
  /** The explicitly allowed browser origins (`CORS_ORIGINS`), for an operation that checks a cookie write itself. */
  origins: readonly string[];
  /** The plans (caps and limits per tenant): `config/plans.json` / `PLANS_FILE` locally, the CDK context `plans` on AWS. */
  plans: Plans;
  sandboxStore: SandboxStore;
  sandboxRuntime: SandboxRuntime;
  sandboxConfig: SandboxConfig;
  /** The warm pool's records (table `pool`). */
  poolStore: PoolStore;
  /** Refills a spec's pool after a claim (AWS: an asynchronous invoke of the refill function; locally in process). */
  poolRefill: PoolRefill | null;
  /** Sets off a claim's 10 s binding deadline (AWS: a Step Functions execution; locally a timer). */
  poolDeadline: PoolDeadline | null;
  /** The control-plane URL a sandbox calls, given the Host header of the request that starts it. */
  bridgeUrl: (host: string | undefined) => string;
  conversationStore: ConversationStore;
  startTaskStore: StartTaskStore;
  eventStore: EventStore;
  /** The sweeper's sum of stored event bytes per organization. */
  orgEventBytes: OrgEventBytes;
  /** Signs sandboxes' snapshot requests (AWS); null locally, where a workspace is a directory. */
  workspaceSnapshots: WorkspaceSnapshots | null;
  /** A paused sandbox's workspace as a tar.gz: its latest snapshot (AWS), `tar` of its directory (locally). */
  workspaceArchives: WorkspaceArchives;
  /** Removes a deleted sandbox's snapshots (AWS: an asynchronous invoke of the function that holds S3); null locally. */
  snapshotRemoval: SnapshotRemoval | null;
  /** Pushes queued commands to sandbox programs' sockets (AWS); null locally, where programs long-poll. */
  commandPush: CommandPush | null;
  /** Told when a conversation's events are committed, to push them to its stream's clients. */
  eventFeed: EventFeed;
  /** Single-use stream tickets, hashed, in the keys table under `stream-ticket:<id>`. */
  streamTicketStore: StreamTicketStore;
  /** AWS: the WebSocket API's open connections by conversation, with their delivery positions. */
  streamConnectionStore: ConnectionStore;
  /** AWS: PostToConnection / GetConnection on the stream API's stage. */
  streamPush: ConnectionPush;
  /** AWS: starts the resend step after `$connect` (an asynchronous invoke). */
  streamResendTrigger: ResendTrigger;
  /** Powertools' DynamoDB persistence on the idempotency table (routes declared `idempotent: true`). */
  idempotencyStore: IdempotencyStore;
  /** The usage ledger (table `usage`). */
  usageStore: UsageStore;
  agentReports: AgentReports;
  /** Where FOCUS export files go: the operator's S3 bucket on AWS, DATA_DIR/billing-exports/ locally. */
  billingExports: BillingExportSink;
  /** Stripe's meter event stream (our own fetch); null where no Stripe key is configured (optional per deployment). */
  stripe: StripeMeterClient | null;
  /** Organizations' Stripe customers and the `reported` marks (table `usage`). */
  stripeStore: StripeStore;
  /** Where 80% / 100% usage notices go beyond the ledger: the operator's EventBridge bus on AWS; null locally (a log line). */
  usageBus: UsageBus | null;
  /** Compute prices: `config/prices.json` / `PRICES_FILE` locally, the CDK context `prices` on AWS. */
  prices: Prices;
  /** Platform models, their upstreams and prices: `config/platform-llms.json` / `PLATFORM_LLMS_FILE` locally, the CDK context `platformLlms` on AWS. */
  platformModels: PlatformModels;
  /** A platform model's upstream key: locally its `api_key_env`, on AWS read once from its SSM/Secrets Manager ARN and cached. */
  platformLlmKey: (model: string) => Promise<string>;
  /** The LLM gateway's records, reservations and rate counters (tables `usage` and `keys`). */
  llmLedger: LlmLedger;
  /** People, organizations, invitations (tables `users`, `orgs`, `invitations`). */
  /** The removal of a deleted account's data (the daily usage reconcile's function alone). */
  accountPurgeStore: AccountPurgeStore;
  accountStore: AccountStore;
  /** The audit log's writer: new entries only (table access `append`). */
  auditStore: AuditStore;
  /** The audit log's reader. */
  auditReader: AuditReader;
  /** The configured OpenID issuer's token verifier (one per process: its key cache); null without an issuer. */
  oidc: OidcVerifier | null;
  /** Closes a person's open event streams (suspension, removal): locally the gateway's sockets, on AWS DeleteConnection. */
  streamEviction: StreamEviction;
  /** Sign-in attempt counters (per IP, per account), in the keys table. */
  signInLimiter: RateLimiter;
}
export type AdapterName = keyof Adapters;

/** How one adapter is built; `get` gives the adapters it is built on, checked the same way. */
export type Builder<K extends AdapterName> = (get: <J extends AdapterName>(name: J) => Adapters[J]) => Adapters[K];
export type Builders = { [K in AdapterName]?: Builder<K> };

/**
 * What each adapter asks of the declaration of a function that builds it (`build`) and of one that
 * calls a given method (`calls`), on AWS and locally alike. The table is the one place that knows
 * which IAM-bearing resource each adapter touches; a function's adapters are derived from its services
 * and declaration (shared/wiring/function-adapters.ts), and `wire` holds every build and call to the
 * function's declaration.
 */
export const adapterNeeds: {
  [K in AdapterName]: {
    build: Needs;
    calls?: { [M in keyof Adapters[K]]?: Needs };
    /** The adapters its AWS builder is built on (`get`): a function has it only where it has these too. */
    builtOn?: readonly AdapterName[];
  };
} = {
  keyStore: {
    build: { tables: { keys: 'read' } },
    calls: {
      create: { tables: { keys: 'write' } },
      revoke: { tables: { keys: 'write' } },
      touch: { tables: { keys: 'write' } },
    },
  },
  settingsStore: {
    build: { tables: { settings: 'read' } },
    calls: { put: { tables: { settings: 'write' } }, update: { tables: { settings: 'write' } } },
  },
  sealer: {
    build: { anyOf: ['seal', 'unseal'] },
    calls: { seal: { capabilities: ['seal'] }, open: { capabilities: ['unseal'] } },
  },
  cursorKey: { build: { tables: { keys: 'write' }, capabilities: ['seal', 'unseal'] }, builtOn: ['sealer'] },
  sessionStore: {
    build: { tables: { keys: 'read' } },
    calls: { create: { tables: { keys: 'write' } }, delete: { tables: { keys: 'write' } } },
  },
  conversationKeySecret: {
    build: { tables: { keys: 'write' }, capabilities: ['seal', 'unseal'] },
    builtOn: ['sealer'],
  },
  specs: { build: { capabilities: ['specs'] } },
  origins: { build: { capabilities: ['origins'] } },
  plans: { build: { capabilities: ['plans'] } },
  prices: { build: { capabilities: ['prices'] } },
  billingExports: { build: { capabilities: ['billing:export'] } },
  stripe: { build: { capabilities: ['stripe'] } },
  stripeStore: {
    build: { tables: { usage: 'read' } },
    calls: {
      setCustomer: { tables: { usage: 'write' } },
      markReported: { tables: { usage: 'write' } },
      claimCorrection: { tables: { usage: 'write' } },
      confirmCorrection: { tables: { usage: 'write' } },
    },
  },
  platformModels: { build: { capabilities: ['platform-llms'] } },
  platformLlmKey: { build: { capabilities: ['platform-llms', 'platform-llm-keys'] }, builtOn: ['platformModels'] },
  llmLedger: { build: { tables: { usage: 'write', keys: 'write' } } },
  usageStore: {
    build: { tables: { usage: 'read' } },
    calls: {
      recordCompute: { tables: { usage: 'write' } },
      repairTotals: { tables: { usage: 'write' } },
      grantCredits: { tables: { usage: 'write' } },
      recordCorrection: { tables: { usage: 'write' } },
      claimNotice: { tables: { usage: 'write' } },
      moveHolding: { tables: { usage: 'write' } },
      recordStorage: { tables: { usage: 'write' } },
    },
  },
  agentReports: { build: { tables: { usage: 'write' } } },
  usageBus: { build: { capabilities: ['usage:notify'] } },
  sandboxStore: {
    build: { tables: { sandboxes: 'read' } },
    calls: {
      create: { tables: { sandboxes: 'write' } },
      update: { tables: { sandboxes: 'write' } },
      touchActivity: { tables: { sandboxes: 'write' } },
      reserveRunning: { tables: { sandboxes: 'write' } },
      releaseRunning: { tables: { sandboxes: 'write' } },
      setRunning: { tables: { sandboxes: 'write' } },
      remove: { tables: { sandboxes: 'write' } },
      nextCommandSeq: { tables: { sandboxes: 'write' } },
      putCommand: { tables: { commands: 'write' } },
      setCommandSocket: { tables: { sandboxes: 'write' } },
      clearCommandSocket: { tables: { sandboxes: 'write' } },
      listCommands: { tables: { commands: 'read' } },
      deleteCommand: { tables: { commands: 'write' } },
      deleteAllCommands: { tables: { commands: 'write' } },
      getCommand: { tables: { commands: 'read' } },
      putReply: { tables: { commands: 'write' } },
      getReply: { tables: { commands: 'read' } },
      deleteReply: { tables: { commands: 'write' } },
    },
  },
  sandboxRuntime: {
    build: { anyOf: ['ecs:run', 'ecs:stop', 'ecs:describe'] },
    calls: {
      start: { capabilities: ['ecs:run', 'ecs:task-definitions'] },
      stop: { capabilities: ['ecs:stop', 'ecs:describe'] },
      status: { capabilities: ['ecs:describe'] },
      // Stops the tasks and waits for them (the snapshots are removed after the last one).
      destroy: { capabilities: ['ecs:stop', 'ecs:describe'] },
      list: { capabilities: ['ecs:describe'] },
    },
  },
  sandboxConfig: { build: {} },
  poolStore: {
    build: { tables: { pool: 'read' } },
    calls: {
      createStandby: { tables: { pool: 'write' } },
      updateStandby: { tables: { pool: 'write' } },
      heartbeat: { tables: { pool: 'write' } },
      removeStandby: { tables: { pool: 'write' } },
      touchPool: { tables: { pool: 'write' } },
      takeSlot: { tables: { pool: 'write' } },
      suspension: { tables: { users: 'read', orgs: 'read' } },
    },
  },
  poolRefill: { build: { capabilities: ['pool:refill'] } },
  poolDeadline: { build: { capabilities: ['pool:deadline'] } },
  bridgeUrl: { build: {} },
  conversationStore: {
    build: { tables: { conversations: 'read' } },
    calls: {
      create: { tables: { conversations: 'write' } },
      update: { tables: { conversations: 'write' } },
      delete: { tables: { conversations: 'write' } },
      setCount: { tables: { conversations: 'write' } },
    },
  },
  startTaskStore: {
    build: { tables: { startTasks: 'read' } },
    calls: { create: { tables: { startTasks: 'write' } }, transition: { tables: { startTasks: 'write' } } },
  },
  orgEventBytes: { build: { tables: { events: 'write' }, capabilities: ['events:grown-bytes'] } },
  eventStore: {
    build: { tables: { events: 'read' } },
    calls: { append: { tables: { events: 'write' } } },
  },
  workspaceSnapshots: { build: { capabilities: ['s3:workspaces'] } },
  workspaceArchives: { build: { capabilities: ['s3:workspaces:read'] } },
  snapshotRemoval: { build: { capabilities: ['snapshots:delete'] } },
  commandPush: { build: { capabilities: ['commands:push'] } },
  // On AWS a push to the conversation's open connections (locally the gateway's own hub).
  eventFeed: { build: {}, builtOn: ['streamConnectionStore', 'eventStore', 'streamPush'] },
  streamTicketStore: {
    build: { tables: { keys: 'read' } },
    calls: { put: { tables: { keys: 'write' } }, take: { tables: { keys: 'write' } } },
  },
  streamConnectionStore: {
    build: { tables: { streamConnections: 'read' } },
    calls: Object.fromEntries(
      (['add', 'remove', 'want', 'markReady', 'lease', 'advance', 'release'] as const).map((m) => [
        m,
        { tables: { streamConnections: 'write' } },
      ]),
    ) as Partial<Record<keyof ConnectionStore, Needs>>,
  },
  streamPush: { build: { capabilities: ['stream:push'] } },
  accountStore: {
    build: { tables: { users: 'read' }, capabilities: ['signin'] },
    calls: {
      getOrg: { tables: { orgs: 'read' } },
      listOrgs: { tables: { orgs: 'read' } },
      createUser: { tables: { users: 'write' } },
      replaceUser: { tables: { users: 'write' } },
      createOrg: { tables: { orgs: 'write' } },
      replaceOrg: { tables: { orgs: 'write' } },
      adjustOwners: { tables: { orgs: 'write' } },
      getInvitation: { tables: { invitations: 'read' } },
      listInvitations: { tables: { invitations: 'read' } },
      listInvitationsByEmail: { tables: { invitations: 'read' } },
      createInvitation: { tables: { invitations: 'write' } },
      acceptInvitation: { tables: { invitations: 'write' } },
    },
  },
  auditStore: { build: { tables: { auditLog: 'append' }, capabilities: ['signin'] } },
  accountPurgeStore: {
    build: {
      tables: {
        users: 'write',
        conversations: 'write',
        events: 'write',
        startTasks: 'write',
        keys: 'write',
        settings: 'write',
      },
    },
  },
  auditReader: { build: { tables: { auditLog: 'read' } } },
  oidc: { build: { capabilities: ['signin'] } },
  signInLimiter: { build: { tables: { keys: 'write' } } },
  streamEviction: {
    // Its AWS builder reads the stage's endpoint, which `stream:close` brings.
    build: { capabilities: ['stream:close'] },
    calls: { evict: { tables: { streamConnections: 'read' }, capabilities: ['stream:close'] } },
  },
  streamResendTrigger: { build: { capabilities: ['stream:resend'] } },
  idempotencyStore: { build: { tables: { idempotency: 'write' } } },
};

/** A function's wiring does not allow what its code asked for: a declaration or an entry to fix. */
export class WiringError extends Error {
  override name = 'WiringError';
}

/** Throws a WiringError unless `declared` covers `needs`. */
export function checkNeeds(fn: string, declared: Declaration, needs: Needs, what: string): void {
  const missing = uncovered(declared, needs);
  if (missing.length)
    throw new WiringError(`${fn}: ${what} needs ${missing.join(', ')}, which its declaration does not name`);
}

/** The adapter, with every method that has its own needs checked when called. */
function guarded<K extends AdapterName>(fn: string, declared: Declaration, name: K, adapter: Adapters[K]): Adapters[K] {
  const calls = adapterNeeds[name].calls as Record<string, Needs> | undefined;
  if (!calls || typeof adapter !== 'object' || adapter === null) return adapter;
  return new Proxy(adapter, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      const needs = typeof prop === 'string' ? calls[prop] : undefined;
      if (!needs || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        checkNeeds(fn, declared, needs, `${name}.${String(prop)}()`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** Which adapters each `wire` result holds (an adapters object not made by `wire`, the local stack's own, holds all). */
const wiredNames = new WeakMap<Adapters, ReadonlySet<string>>();

/** Whether `adapters` holds `name`: a service's declared adapter that the function's route does not grant is absent. */
export function isWired(adapters: Adapters, name: AdapterName): boolean {
  return wiredNames.get(adapters)?.has(name) ?? true;
}

/**
 * The adapters of one function: each built on first use from `builders` (its derived adapters') and
 * kept. Any other throws a WiringError instead of being built. Outside Lambda so does one whose
 * build or call its declaration does not cover, so a path that needs more
 * than declared fails in every test that runs it. A Lambda bundle's build defines
 * `process.env.ACS_LAMBDA_BUNDLE` (infra/bundle.ts), so these checks and their Proxy drop out of it:
 * there the static wiring test (test/unit/wiring.test.ts) and the tier's IAM evaluation of each call
 * (test/tier/) hold the deployed path to its declaration.
 */
export function wire(fn: string, declared: Declaration, builders: Builders): Adapters {
  const build = <K extends AdapterName>(name: K): Adapters[K] => {
    const builder = builders[name] as Builder<K> | undefined;
    if (!builder)
      throw new WiringError(
        `${fn}: it does not have the ${name} adapter (its services do not declare it, or its declaration does not grant it)`,
      );
    // Written out (not a constant) so that esbuild's define folds it and drops the other branch.
    if (process.env.ACS_LAMBDA_BUNDLE === 'true') return builder(get);
    else {
      checkNeeds(fn, declared, adapterNeeds[name].build, `building ${name}`);
      return guarded(fn, declared, name, builder(get));
    }
  };
  const out = lazy(
    Object.fromEntries((Object.keys(adapterNeeds) as AdapterName[]).map((name) => [name, () => build(name)])) as {
      [K in AdapterName]: () => Adapters[K];
    },
  );
  const get = <K extends AdapterName>(name: K): Adapters[K] => out[name];
  wiredNames.set(out, new Set(Object.keys(builders)));
  return out;
}

/** Everything the named adapters need to be built: what a declaration must cover for an entry's list. */
export function buildNeeds(names: readonly AdapterName[]): Needs[] {
  return names.map((n) => adapterNeeds[n].build);
}
