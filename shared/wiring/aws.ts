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
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler } from '#shared/http/wrapper.ts';
import { envSpecRegistry } from '#shared/sandbox-specs/env-spec-registry.ts';
import { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';
import { sandboxConfig } from '#shared/sandboxes/config.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { fargateConfigFromEnv, FargateSandboxRuntime } from '#shared/sandboxes/fargate-sandbox-runtime.ts';
import { SandboxService, type SandboxServiceDeps } from '#shared/sandboxes/service.ts';
import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import type { Services } from '#shared/services.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { SettingsService } from '#shared/settings/service.ts';
import { lazy, requireEnv } from '#shared/wiring/lazy.ts';

let services: Services | undefined;

/**
 * Where a sandbox reaches the API: `PUBLIC_BASE_URL` if set (a custom domain), else the host the
 * starting request came to. Never the API's URL through the environment: that would make the
 * functions depend on the API in CloudFormation, a cycle.
 */
export function publicBaseUrl(host: string | undefined): string {
  const configured = process.env.PUBLIC_BASE_URL;
  if (configured) return configured.replace(/\/+$/, '');
  if (!host) throw new Error('Cannot tell a sandbox where the API is: the request has no Host header and PUBLIC_BASE_URL is not set');
  return `https://${host}`;
}

/** The AWS adapters, each built on first use and kept for the container's life. */
export function awsServices(): Services {
  if (!services) {
    let sealer: KmsSealer | undefined;
    let specs: SpecRegistry | undefined;
    const kms = () => (sealer ??= new KmsSealer(requireEnv('SECRETS_KEY_ID', 'the KMS key that seals secrets')));
    const specRegistry = () => (specs ??= envSpecRegistry(process.env.SANDBOX_SPECS));
    const built: Services = lazy<Services>({
      apiKeys: () => new ApiKeys(new DynamoKeyStore()),
      sessions: () => new Sessions(new DynamoSessionStore(), built.apiKeys, () => sessionSeconds()),
      conversationKeys: () => new ConversationKeys(systemKey('conversation-keys', kms()), conversationKeyVersion(new DynamoConversationStore())),
      settings: () => new SettingsService(new DynamoSettingsStore(), kms()),
      cursors: () => new CursorCodec(systemKey('cursor', kms())),
      sandboxSpecs: () => new SandboxSpecService(specRegistry()),
      // Each dependency is built when a method first needs it, so e.g. the search function needs
      // neither the ECS configuration nor the spec registry.
      sandboxes: () =>
        new SandboxService(
          lazy<SandboxServiceDeps>({
            store: () => new DynamoSandboxStore(),
            runtime: () => new FargateSandboxRuntime(fargateConfigFromEnv()),
            specs: specRegistry,
            sealer: kms,
            cursors: () => built.cursors,
            config: () => sandboxConfig(process.env, { startTimeoutSeconds: 600, pollMaxSeconds: 10, pollIntervalMs: 1000 }),
            bridgeUrl: () => publicBaseUrl,
            now: () => () => new Date(),
          }),
        ),
      conversations: () =>
        new ConversationService(new DynamoConversationStore(), new DynamoStartTaskStore(), built.settings, new ServiceSandboxControl(() => built.sandboxes), built.cursors, built.conversationKeys),
      conversationBridge: () =>
        new ConversationBridge(new DynamoConversationStore(), new DynamoStartTaskStore(), new DynamoEventStore(), built.settings, new ServiceSandboxControl(() => built.sandboxes), built.conversations),
      events: () => new EventService(new DynamoEventStore(), new DynamoConversationStore(), built.cursors),
    });
    services = built;
  }
  return services;
}

export const awsHandler = (op: Operation) => lambdaHandler(op, awsServices);
