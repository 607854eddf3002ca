import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiKeys } from '#shared/auth/api-keys.ts';
import { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { DynamoSessionStore } from '#shared/auth/dynamo-session-store.ts';
import { Sessions, sessionSeconds } from '#shared/auth/sessions.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import { ConversationBridge } from '#shared/conversations/bridge.ts';
import { DynamoConversationStore, DynamoStartTaskStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { conversationKeyVersion, ConversationService } from '#shared/conversations/service.ts';
import { ServiceSandboxControl } from '#shared/conversations/service-sandbox-control.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { EventService } from '#shared/events/service.ts';
import { CursorCodec } from '#shared/http/cursor.ts';
import { logger } from '#shared/logging.ts';
import { fileSpecRegistry } from '#shared/sandbox-specs/file-spec-registry.ts';
import { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import { sandboxConfig, type SandboxConfig } from '#shared/sandboxes/config.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { ProcessSandboxRuntime } from '#shared/sandboxes/process-sandbox-runtime.ts';
import { SandboxService } from '#shared/sandboxes/service.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import type { Services } from '#shared/services.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { SettingsService } from '#shared/settings/service.ts';

/** The repository root: local sandbox commands (`sandbox/main.ts`) run from here. */
export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface LocalOptions {
  /** Where local state lives (`.data/` by default): the sealing key, sandboxes' workspaces. */
  dataDir: string;
  /** The gateway's URL, known once it listens: where local sandboxes reach the bridge. */
  bridgeUrl: () => string;
  /** Overrides of the sandbox settings read from the environment (tests, benchmarks). */
  sandboxes?: Partial<SandboxConfig>;
  /** The sandbox specs file (default `config/sandbox-specs.json`). */
  specsFile?: string;
}

export interface LocalServices extends Services {
  /** The process runtime, so the local stack can stop every sandbox process when it closes. */
  sandboxRuntime: ProcessSandboxRuntime;
  /** For the local sweeper timer (start tasks that stall). */
  startTasks: DynamoStartTaskStore;
  sandboxControl: ServiceSandboxControl;
}

/** The local adapters: the same DynamoDB stores (on dynalite), a key-file sealer, child-process sandboxes. */
export function localServices(options: LocalOptions): LocalServices {
  const sealer = LocalSealer.fromKeyFile(join(options.dataDir, 'secret.key'));
  const cursors = new CursorCodec(systemKey('cursor', sealer));
  const specs = fileSpecRegistry(options.specsFile ?? join(PROJECT_ROOT, 'config', 'sandbox-specs.json'));
  let sandboxes: SandboxService | undefined;
  const sandboxRuntime = new ProcessSandboxRuntime({
    dataDir: options.dataDir,
    projectRoot: PROJECT_ROOT,
    // A process that died on its own: the same reconciliation the ECS event handler does on AWS.
    onStopped: (event) =>
      void sandboxes?.handleInstanceStopped(event).catch((err: unknown) => logger.error('Recording a sandbox exit failed', { error: err as Error })),
  });
  sandboxes = new SandboxService({
    store: new DynamoSandboxStore(),
    runtime: sandboxRuntime,
    specs,
    sealer,
    cursors,
    config: { ...sandboxConfig(process.env, { startTimeoutSeconds: 60, pollMaxSeconds: 20, pollIntervalMs: 200 }), ...options.sandboxes },
    bridgeUrl: () => options.bridgeUrl(),
  });
  const settings = new SettingsService(new DynamoSettingsStore(), sealer);
  const conversationStore = new DynamoConversationStore();
  const startTasks = new DynamoStartTaskStore();
  const events = new DynamoEventStore();
  const control = new ServiceSandboxControl(() => sandboxes!);
  const apiKeys = new ApiKeys(new DynamoKeyStore());
  sessionSeconds(); // SESSION_HOURS is checked at start, naming the key; read again at each sign-in
  const conversationKeys = new ConversationKeys(systemKey('conversation-keys', sealer), conversationKeyVersion(conversationStore));
  const conversations = new ConversationService(conversationStore, startTasks, settings, control, cursors, conversationKeys);
  return {
    apiKeys,
    sessions: new Sessions(new DynamoSessionStore(), apiKeys, () => sessionSeconds()),
    conversationKeys,
    settings,
    cursors,
    sandboxes,
    sandboxSpecs: new SandboxSpecService(specs),
    sandboxRuntime,
    conversations,
    conversationBridge: new ConversationBridge(conversationStore, startTasks, events, settings, control, conversations),
    events: new EventService(events, conversationStore, cursors),
    startTasks,
    sandboxControl: control,
  };
}
