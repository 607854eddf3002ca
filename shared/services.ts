import { ApiKeys } from '#shared/auth/api-keys.ts';
import { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import { Sessions, sessionSeconds } from '#shared/auth/sessions.ts';
import { ConversationBridge } from '#shared/conversations/bridge.ts';
import { ConversationRecords } from '#shared/conversations/records.ts';
import { conversationKeyVersion, ConversationService } from '#shared/conversations/service.ts';
import { ServiceSandboxControl } from '#shared/conversations/service-sandbox-control.ts';
import { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import { EventService } from '#shared/events/service.ts';
import { CursorCodec } from '#shared/http/cursor.ts';
import { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import { SandboxBridge } from '#shared/sandboxes/bridge-service.ts';
import { SandboxHousekeeping } from '#shared/sandboxes/housekeeping.ts';
import type { SandboxServiceDeps } from '#shared/sandboxes/records.ts';
import { launchOptionsOf } from '#shared/sandboxes/sandbox-runtime.ts';
import { SandboxService } from '#shared/sandboxes/service.ts';
import { SettingsService } from '#shared/settings/service.ts';
import { StreamAccess } from '#shared/stream/access.ts';
import { StreamTickets } from '#shared/stream/tickets.ts';
import type { AdapterName, Adapters } from '#shared/wiring/adapters.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** What operations use. Built by `servicesOf` over one function's adapters (AWS or local). */
export interface Services {
  apiKeys: ApiKeys;
  sessions: Sessions;
  conversationKeys: ConversationKeys;
  settings: SettingsService;
  cursors: CursorCodec;
  /** Conversations, by audience: the user's API, the webhooks the sandbox calls, housekeeping. */
  conversations: ConversationService;
  conversationBridge: ConversationBridge;
  conversationHousekeeping: ConversationHousekeeping;
  events: EventService;
  /** Sandboxes, by audience: the user's API, the bridge the sandbox program calls, housekeeping. */
  sandboxes: SandboxService;
  sandboxBridge: SandboxBridge;
  sandboxHousekeeping: SandboxHousekeeping;
  sandboxSpecs: SandboxSpecService;
  streamTickets: StreamTickets;
  /** Who may open which conversation's stream (the local upgrade, the AWS `$connect`). */
  streamAccess: StreamAccess;
}

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

/**
 * The services over one function's adapters, each built on first use, each adapter built when a
 * method first touches it (through `wire`, which holds every build and call to the declaration).
 * The one place that says which service uses which adapter, for AWS and local alike.
 */
export function servicesOf(adapters: Adapters): Services {
  const a = <K extends AdapterName>(name: K) => deferred(() => adapters[name] as Adapters[K] & object);
  // Plain values and functions are read when first called, not when the service is built.
  const sandboxDeps = (): SandboxServiceDeps =>
    lazy<SandboxServiceDeps>({
      store: () => adapters.sandboxStore,
      runtime: () => adapters.sandboxRuntime,
      specs: () => adapters.specs,
      sealer: () => adapters.sealer,
      cursors: () => built.cursors,
      config: () => adapters.sandboxConfig,
      bridgeUrl: () => adapters.bridgeUrl,
      snapshots: () => adapters.workspaceSnapshots,
      launchOptions: () => async (userId: string) => launchOptionsOf(await built.settings.find(userId)),
      commandPush: () => adapters.commandPush,
      now: () => () => new Date(),
    });
  const sandboxControl = () => new ServiceSandboxControl(() => built.sandboxes, () => built.sandboxBridge);
  const conversationRecords = () => new ConversationRecords(a('conversationStore'));
  const built: Services = lazy<Services>({
    apiKeys: () => new ApiKeys(a('keyStore')),
    sessions: () => new Sessions(a('sessionStore'), built.apiKeys, () => sessionSeconds()),
    conversationKeys: () => new ConversationKeys(() => adapters.conversationKeySecret(), conversationKeyVersion(a('conversationStore'))),
    settings: () => new SettingsService(a('settingsStore'), a('sealer')),
    cursors: () => new CursorCodec(() => adapters.cursorKey()),
    sandboxSpecs: () => new SandboxSpecService(a('specs')),
    sandboxes: () => new SandboxService(sandboxDeps()),
    sandboxBridge: () => new SandboxBridge(sandboxDeps()),
    sandboxHousekeeping: () => new SandboxHousekeeping(sandboxDeps()),
    conversations: () =>
      new ConversationService(a('conversationStore'), a('startTaskStore'), built.settings, sandboxControl(), built.cursors, built.conversationKeys, conversationRecords()),
    conversationBridge: () =>
      new ConversationBridge(
        a('conversationStore'),
        a('startTaskStore'),
        a('eventStore'),
        built.settings,
        sandboxControl(),
        conversationRecords(),
        a('eventFeed'),
      ),
    conversationHousekeeping: () => new ConversationHousekeeping(a('startTaskStore'), sandboxControl()),
    events: () => new EventService(a('eventStore'), a('conversationStore'), built.cursors),
    streamTickets: () => new StreamTickets(a('streamTicketStore'), a('conversationStore')),
    streamAccess: () =>
      new StreamAccess({ apiKeys: built.apiKeys, sessions: built.sessions, conversationKeys: built.conversationKeys, tickets: built.streamTickets, conversations: a('conversationStore') }),
  });
  return built;
}
