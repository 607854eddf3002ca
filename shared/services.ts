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
import { WiringError, type AdapterName, type Adapters } from '#shared/wiring/adapters.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** What operations use. A function gets those its entry names (`servicesOf`), over its own adapters (AWS or local). */
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
export type ServiceName = keyof Services;

/** What a service factory builds with: its function's adapters, and the other services it is built on. */
export interface ServiceContext {
  /** The adapter, built when one of its members is first used (so building a service builds no adapter). */
  adapter<K extends AdapterName>(name: K): Adapters[K];
  /** The adapters as they are, for plain values and functions read when first called. */
  adapters: Adapters;
  /** Another service, built once per function, whether its entry names it or not. */
  use<T>(factory: ServiceFactory<T>): T;
}
/** How one service is built. Each is a separate export, so a bundle carries only the factories (and classes) its entry imports. */
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
  sessions: true,
  conversationKeys: true,
  settings: true,
  cursors: true,
  conversations: true,
  conversationBridge: true,
  conversationHousekeeping: true,
  events: true,
  sandboxes: true,
  sandboxBridge: true,
  sandboxHousekeeping: true,
  sandboxSpecs: true,
  streamTickets: true,
  streamAccess: true,
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
  };
  const out = {} as Services;
  for (const name of Object.keys(serviceNames) as ServiceName[]) {
    Object.defineProperty(out, name, {
      enumerable: true,
      get: () => {
        const factory = factories[name] as ServiceFactory<unknown> | undefined;
        if (!factory) throw new WiringError(`${fn}: its entry does not name the ${name} service (add it to the services the entry passes)`);
        return context.use(factory);
      },
    });
  }
  return out;
}

/*
 * The factories: the one place that says which service uses which adapters and services, for AWS
 * and local alike. An entry imports those its operation reads.
 */
export const apiKeys: ServiceFactory<ApiKeys> = (c) => new ApiKeys(c.adapter('keyStore'));
export const sessions: ServiceFactory<Sessions> = (c) => new Sessions(c.adapter('sessionStore'), c.use(apiKeys), () => sessionSeconds());
export const conversationKeys: ServiceFactory<ConversationKeys> = (c) =>
  new ConversationKeys(() => c.adapters.conversationKeySecret(), conversationKeyVersion(c.adapter('conversationStore')));
export const settings: ServiceFactory<SettingsService> = (c) => new SettingsService(c.adapter('settingsStore'), c.adapter('sealer'));
export const cursors: ServiceFactory<CursorCodec> = (c) => new CursorCodec(() => c.adapters.cursorKey());
export const sandboxSpecs: ServiceFactory<SandboxSpecService> = (c) => new SandboxSpecService(c.adapter('specs'));

/**
 * What every sandbox audience is built on; plain values and functions are read when first called.
 * Only the user's API starts sandboxes, so only it reads the user's settings (`launchOptions`): the
 * bridge's and housekeeping's bundles carry no settings service.
 */
const sandboxDeps = (c: ServiceContext, launchOptions?: SandboxServiceDeps['launchOptions']): SandboxServiceDeps =>
  lazy<SandboxServiceDeps>({
    store: () => c.adapters.sandboxStore,
    runtime: () => c.adapters.sandboxRuntime,
    specs: () => c.adapters.specs,
    sealer: () => c.adapters.sealer,
    cursors: () => c.use(cursors),
    config: () => c.adapters.sandboxConfig,
    bridgeUrl: () => c.adapters.bridgeUrl,
    snapshots: () => c.adapters.workspaceSnapshots,
    snapshotRemoval: () => c.adapters.snapshotRemoval,
    launchOptions: () => launchOptions,
    commandPush: () => c.adapters.commandPush,
    now: () => () => new Date(),
  });
export const sandboxes: ServiceFactory<SandboxService> = (c) =>
  new SandboxService(sandboxDeps(c, async (userId) => launchOptionsOf(await c.use(settings).find(userId))));
export const sandboxBridge: ServiceFactory<SandboxBridge> = (c) => new SandboxBridge(sandboxDeps(c));
export const sandboxHousekeeping: ServiceFactory<SandboxHousekeeping> = (c) => new SandboxHousekeeping(sandboxDeps(c));

const sandboxControl = (c: ServiceContext) => new ServiceSandboxControl(() => c.use(sandboxes), () => c.use(sandboxBridge));
const conversationRecords = (c: ServiceContext) => new ConversationRecords(c.adapter('conversationStore'));
export const conversations: ServiceFactory<ConversationService> = (c) =>
  new ConversationService(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.use(settings),
    sandboxControl(c),
    c.use(cursors),
    c.use(conversationKeys),
    conversationRecords(c),
  );
export const conversationBridge: ServiceFactory<ConversationBridge> = (c) =>
  new ConversationBridge(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.adapter('eventStore'),
    c.use(settings),
    sandboxControl(c),
    conversationRecords(c),
    c.adapter('eventFeed'),
  );
export const conversationHousekeeping: ServiceFactory<ConversationHousekeeping> = (c) => new ConversationHousekeeping(c.adapter('startTaskStore'), sandboxControl(c));
export const events: ServiceFactory<EventService> = (c) => new EventService(c.adapter('eventStore'), c.adapter('conversationStore'), c.use(cursors));
export const streamTickets: ServiceFactory<StreamTickets> = (c) => new StreamTickets(c.adapter('streamTicketStore'), c.adapter('conversationStore'));
export const streamAccess: ServiceFactory<StreamAccess> = (c) =>
  new StreamAccess({
    apiKeys: c.use(apiKeys),
    sessions: c.use(sessions),
    conversationKeys: c.use(conversationKeys),
    tickets: c.use(streamTickets),
    conversations: c.adapter('conversationStore'),
  });

/** Every factory: what the local stack's process-wide services are built from. */
export const allServices: Required<ServiceFactories> = {
  apiKeys,
  sessions,
  conversationKeys,
  settings,
  cursors,
  conversations,
  conversationBridge,
  conversationHousekeeping,
  events,
  sandboxes,
  sandboxBridge,
  sandboxHousekeeping,
  sandboxSpecs,
  streamTickets,
  streamAccess,
};
