import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import { DynamoConversationStore, DynamoStartTaskStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { EventFunctionDef } from '#shared/functions.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler, type ApiHandler } from '#shared/http/wrapper.ts';
import { envSpecRegistry } from '#shared/sandbox-specs/env-spec-registry.ts';
import { sandboxConfig as readSandboxConfig } from '#shared/sandboxes/config.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { fargateConfigFromEnv, FargateSandboxRuntime } from '#shared/sandboxes/fargate-sandbox-runtime.ts';
import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import { servicesOf, type Services } from '#shared/services.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { wire, type AdapterName, type Builder, type Builders } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/*
 * The AWS adapters, one builder each. An entry imports the builders its function may use and passes
 * them to `awsRoute` or `awsFunction`, so its bundle carries those adapters (and their SDK clients)
 * and no other; shared/wiring/adapters.ts checks each build and call against the declaration.
 */
export const keyStore: Builder<'keyStore'> = () => new DynamoKeyStore();
export const settingsStore: Builder<'settingsStore'> = () => new DynamoSettingsStore();
export const sealer: Builder<'sealer'> = () => new KmsSealer(requireEnv('SECRETS_KEY_ID', 'the KMS key that seals secrets'));
export const cursorKey: Builder<'cursorKey'> = (get) => systemKey('cursor', get('sealer'));
export const specs: Builder<'specs'> = () => envSpecRegistry(process.env.SANDBOX_SPECS);
export const sandboxStore: Builder<'sandboxStore'> = () => new DynamoSandboxStore();
export const sandboxRuntime: Builder<'sandboxRuntime'> = () => new FargateSandboxRuntime(fargateConfigFromEnv());
export const sandboxConfig: Builder<'sandboxConfig'> = () =>
  readSandboxConfig(process.env, { startTimeoutSeconds: 600, pollMaxSeconds: 10, pollIntervalMs: 1000 });
export const bridgeUrl: Builder<'bridgeUrl'> = () => publicBaseUrl;
export const conversationStore: Builder<'conversationStore'> = () => new DynamoConversationStore();
export const startTaskStore: Builder<'startTaskStore'> = () => new DynamoStartTaskStore();
export const eventStore: Builder<'eventStore'> = () => new DynamoEventStore();

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

/** How a function is wired: read by the local gateway (which gives it the local adapters of the same names) and the wiring test. */
export interface FunctionWiring {
  id: string;
  declaration: Declaration;
  /** The adapters its entry lets it build. */
  adapters: AdapterName[];
  /** Their AWS builders. */
  builders: Builders;
  /** The route's operation (routes only). */
  operation?: Operation;
}

/** The services of one function on AWS, built on first use from the adapters it names, held to its declaration. */
function awsServices(id: string, declaration: Declaration, builders: Builders): () => Services {
  let services: Services | undefined;
  return () => (services ??= servicesOf(wire(id, declaration, builders)));
}

/** A route's Lambda handler: the wrapper around its operation, over the AWS adapters its entry names. */
export function awsRoute(operation: Operation, builders: Builders): ApiHandler & { wiring: FunctionWiring } {
  const { route } = operation;
  const handler = lambdaHandler(operation, awsServices(route.id, route, builders));
  return Object.assign(handler, { wiring: { id: route.id, declaration: route, adapters: Object.keys(builders) as AdapterName[], builders, operation } });
}

/** An event function's handler (authorizer, ECS events, sweeper): `run` gets its services, held to its declaration. */
export function awsFunction<E, R>(
  fn: EventFunctionDef,
  builders: Builders,
  run: (event: E, services: Services) => Promise<R>,
): ((event: E) => Promise<R>) & { wiring: FunctionWiring } {
  const services = awsServices(fn.id, fn, builders);
  const handler = (event: E) => run(event, services());
  return Object.assign(handler, { wiring: { id: fn.id, declaration: fn, adapters: Object.keys(builders) as AdapterName[], builders } });
}
