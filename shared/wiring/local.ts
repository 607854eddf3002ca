import { DynamoOrgEventBytes } from '#shared/events/dynamo-org-bytes.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoAccountStore, DynamoAuditReader, DynamoAuditStore } from '#shared/accounts/dynamo-account-store.ts';
import { DynamoAccountPurgeStore } from '#shared/accounts/account-purge-store.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { oidcVerifier } from '#shared/auth/oidc.ts';
import { DynamoRateLimiter } from '#shared/auth/rate-limit.ts';
import { DynamoSessionStore } from '#shared/auth/dynamo-session-store.ts';
import { sessionSeconds } from '#shared/auth/sessions.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import { DynamoConversationStore, DynamoStartTaskStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { dynamoIdempotencyStore } from '#shared/store/dynamo-idempotency-store.ts';
import { logger } from '#shared/logging.ts';
import { allowedOrigins } from '#shared/http/cors.ts';
import { filePlans } from '#shared/plans/load.ts';
import { filePrices } from '#shared/usage/prices.ts';
import { filePlatformModels } from '#shared/llm/platform-models.ts';
import { envKey } from '#shared/llm/keys.ts';
import { DynamoLlmLedger } from '#shared/llm/dynamo-ledger.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { folderSink } from '#shared/billing/folder-sink.ts';
import { DynamoStripeStore } from '#shared/billing/dynamo-stripe-store.ts';
import { DynamoAgentReports } from '#shared/usage/dynamo-agent-reports.ts';
import { envStripe } from '#shared/billing/stripe.ts';
import type { Plans } from '#shared/plans/model.ts';
import { fileSpecRegistry } from '#shared/sandbox-specs/file-spec-registry.ts';
import { sandboxConfig, type SandboxConfig } from '#shared/sandboxes/config.ts';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import { BINDING_ACK_MS } from '#shared/sandboxes/pool-store.ts';
import {
  ProcessSandboxRuntime,
  type ProcessRuntimeOptions,
} from '#shared/sandboxes/runtime/process-sandbox-runtime.ts';
import { directoryArchive } from '#shared/sandboxes/snapshots/workspace-archive.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import { servicesOf, type ServiceFactories, type Services } from '#shared/services.ts';
import { allServices } from '#shared/services/all.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { DynamoStreamTicketStore } from '#shared/stream/dynamo-ticket-store.ts';
import { localStreamEviction } from '#shared/stream/eviction.ts';
import { LocalEventHub } from '#shared/stream/local-event-hub.ts';
import { SendPacer } from '#shared/stream/send-pacer.ts';
import { wire, type AdapterName, type Adapters, type Builders } from '#shared/wiring/adapters.ts';
import { lazy } from '#shared/wiring/lazy.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/** The repository root: the checkout, which no contained sandbox sees. */
export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** An adapter of API Gateway's WebSocket API, which nothing local builds: a clear error if something tries. */
const awsOnly = (name: string) => (): never => {
  throw new Error(`${name} exists on AWS only: the local gateway serves the event stream itself`);
};

export interface LocalOptions {
  /** Where local state lives (`.data/` by default): the sealing key, sandboxes' workspaces. */
  dataDir: string;
  /** The gateway's URL, known once it listens: where local sandboxes reach the bridge. */
  bridgeUrl: () => string;
  /** Overrides of the sandbox settings read from the environment (tests, benchmarks). */
  sandboxes?: Partial<SandboxConfig>;
  /** The sandbox specs file (default `config/sandbox-specs.json`). */
  specsFile?: string;
  /** The plans file (default `config/plans.json`; `PLANS_FILE` for `npm start`). */
  plansFile?: string;
  /** The prices file (default `config/prices.json`; `PRICES_FILE` for `npm start`). */
  pricesFile?: string;
  /** The platform models (default `config/platform-llms.json`; `PLATFORM_LLMS_FILE` for `npm start`). */
  platformLlmsFile?: string;
  /** Replaces the size of every spec's warm pool (0: none); the specs file's sizes when undefined. */
  warmPoolSize?: number;
  /** Where queued commands are pushed (LocalConfig.commandPush); none: programs long-poll. */
  commandPush?: CommandPush;
  /** How sandbox processes are contained and what they run (see ProcessSandboxRuntime). */
  containment: Pick<ProcessRuntimeOptions, 'containment' | 'programDir' | 'uncontainedUsers'>;
}

export interface LocalServices extends Services {
  /** The process runtime, so the local stack can stop every sandbox process when it closes. */
  sandboxRuntime: ProcessSandboxRuntime;
  /** The event feed of the local stream: the bridge route tells it, the gateway's WebSocket subscribes to it. */
  eventHub: LocalEventHub;
  /** The plans (`config/plans.json` or PLANS_FILE), read by the local stream's socket caps. */
  plans: Plans;
  /** Clears the pending binding deadlines (a closing stack). */
  clearDeadlines(): void;
  /**
   * The same services for one function, held to its declaration, its derived adapters and the services
   * its entry names, as on AWS: the local gateway runs each route through these, so every test that
   * goes through it fails on a path that builds or calls what the route does not declare.
   */
  forFunction(
    id: string,
    declaration: Declaration,
    adapters: readonly AdapterName[],
    services: ServiceFactories,
  ): Services;
}

/**
 * The local adapters: the same DynamoDB stores (on dynalite), a key-file sealer, child-process
 * sandboxes. One of each for the process (the runtime knows its child processes), shared by every
 * function's wiring.
 */
export function localServices(options: LocalOptions): LocalServices {
  let all: Services | undefined;
  const deadlines = new Set<NodeJS.Timeout>();
  const sandboxRuntime = new ProcessSandboxRuntime({
    dataDir: options.dataDir,
    projectRoot: PROJECT_ROOT,
    ...options.containment,
    // A process that died on its own: the same reconciliation the ECS event handler does on AWS.
    onStopped: (event) =>
      void all?.sandboxHousekeeping
        .handleInstanceStopped(event)
        .catch((err: unknown) => logger.error('Recording a sandbox exit failed', { error: err as Error })),
    // A standby's process ended: its pool item goes (the ECS events function does this on AWS).
    onStandbyStopped: (standbyId) =>
      void all?.warmPool
        .standbyStopped(standbyId)
        .catch((err: unknown) => logger.error('Recording a standby exit failed', { error: err as Error })),
  });
  // Checked at start, naming the key: a bad plans file stops `npm start` rather than the first capped request.
  const plans = filePlans(options.plansFile ?? join(PROJECT_ROOT, 'config', 'plans.json'));
  const prices = filePrices(options.pricesFile ?? join(PROJECT_ROOT, 'config', 'prices.json'));
  const platformModels = filePlatformModels(
    options.platformLlmsFile ?? join(PROJECT_ROOT, 'config', 'platform-llms.json'),
  );
  const eventHub = new LocalEventHub(() => adapters.eventStore, new SendPacer());
  const adapters: Adapters = lazy<Adapters>({
    keyStore: () => new DynamoKeyStore(),
    settingsStore: () => new DynamoSettingsStore(),
    sealer: () => LocalSealer.fromKeyFile(join(options.dataDir, 'secret.key')),
    cursorKey: (): Adapters['cursorKey'] => systemKey('cursor', adapters.sealer),
    conversationKeySecret: (): Adapters['conversationKeySecret'] => systemKey('conversation-keys', adapters.sealer),
    sessionStore: () => new DynamoSessionStore(),
    specs: () =>
      fileSpecRegistry(options.specsFile ?? join(PROJECT_ROOT, 'config', 'sandbox-specs.json'), options.warmPoolSize),
    origins: () => allowedOrigins(),
    plans: () => plans,
    prices: () => prices,
    platformModels: () => platformModels,
    platformLlmKey: () => envKey(platformModels, process.env),
    llmLedger: () => new DynamoLlmLedger(),
    usageStore: () => new DynamoUsageStore(),
    agentReports: () => new DynamoAgentReports(),
    billingExports: () => folderSink(join(options.dataDir, 'billing-exports')),
    // Optional: STRIPE_API_KEY (read when a report first needs it), STRIPE_API_BASE / STRIPE_METER_EVENTS_BASE to point elsewhere.
    stripe: () => envStripe(process.env),
    stripeStore: () => new DynamoStripeStore(),
    // No bus locally: a notice is the `usage.threshold` log line and the list (GET /api/v1/notifications).
    usageBus: () => null,
    sandboxStore: () => new DynamoSandboxStore(),
    sandboxRuntime: () => sandboxRuntime,
    poolStore: () => new DynamoPoolStore(),
    // In process, a second after the claim returns: a refill spawns a process on the cores the claimed standby
    // needs for its check-in (done at once, it made a warm start about 100 ms slower: docs/performance.md).
    poolRefill: (): Adapters['poolRefill'] => ({
      refill: async (specId) => {
        setTimeout(
          () =>
            void all?.warmPool
              .refill(specId)
              .catch((err: unknown) => logger.error('Refilling the warm pool failed', { specId, error: err as Error })),
          1000,
        );
      },
    }),
    // A timer in the server, as the state machine waits on AWS; it never keeps the process alive, and
    // a closing stack clears it (it would run against a closed database).
    poolDeadline: (): Adapters['poolDeadline'] => ({
      schedule: async (claim) => {
        const timer = setTimeout(() => {
          deadlines.delete(timer);
          void all?.sandboxHousekeeping
            .bindingDeadline(claim)
            .catch((err: unknown) =>
              logger.error('A binding deadline failed', { sandboxId: claim.sandbox_id, error: err as Error }),
            );
        }, BINDING_ACK_MS).unref();
        deadlines.add(timer);
      },
    }),
    sandboxConfig: () => ({
      ...sandboxConfig(process.env, { startTimeoutSeconds: 60, pollMaxSeconds: 20, pollIntervalMs: 200 }),
      ...options.sandboxes,
    }),
    bridgeUrl: () => () => options.bridgeUrl(),
    conversationStore: () => new DynamoConversationStore(),
    startTaskStore: () => new DynamoStartTaskStore(),
    eventStore: () => new DynamoEventStore(),
    orgEventBytes: () => new DynamoOrgEventBytes(),
    // Local workspaces are directories that outlive their process: nothing to snapshot.
    workspaceSnapshots: () => null,
    // A paused sandbox's workspace reads: its directory, archived by the same tar the AWS snapshots are made with.
    workspaceArchives: (): Adapters['workspaceArchives'] => ({
      open: async (rec) => directoryArchive(sandboxRuntime.workspaceDir(rec.id)),
    }),
    snapshotRemoval: () => null,
    // Local programs long-poll (the HTTP path every deployment keeps as the fallback), unless a test plugs in a socket.
    commandPush: () => options.commandPush ?? null,
    eventFeed: () => eventHub,
    streamTicketStore: () => new DynamoStreamTicketStore(),
    // The WebSocket API's side of the stream: the local gateway serves the stream itself (eventHub).
    streamConnectionStore: awsOnly('streamConnectionStore'),
    streamPush: awsOnly('streamPush'),
    streamResendTrigger: awsOnly('streamResendTrigger'),
    idempotencyStore: () => dynamoIdempotencyStore(),
    accountStore: () => new DynamoAccountStore(),
    accountPurgeStore: () => new DynamoAccountPurgeStore(),
    auditStore: () => new DynamoAuditStore(),
    auditReader: () => new DynamoAuditReader(),
    oidc: () => oidcVerifier(),
    // The gateway's own sockets, closed in this process.
    streamEviction: () => localStreamEviction,
    signInLimiter: () => new DynamoRateLimiter(),
  });
  sessionSeconds(); // SESSION_HOURS is checked at start, naming the key; read again at each sign-in
  const builders = (names: readonly AdapterName[]): Builders =>
    Object.fromEntries(names.map((name) => [name, () => adapters[name]])) as Builders;
  all = servicesOf('local', adapters, allServices);
  return Object.assign(all, {
    sandboxRuntime,
    eventHub,
    plans,
    clearDeadlines: () => {
      for (const timer of deadlines) clearTimeout(timer);
      deadlines.clear();
    },
    forFunction: (id: string, declaration: Declaration, names: readonly AdapterName[], services: ServiceFactories) =>
      servicesOf(id, wire(id, declaration, builders(names)), services),
  });
}
