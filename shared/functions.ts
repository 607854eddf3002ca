import type { Declaration } from '#shared/wiring/needs.ts';

/**
 * The functions of the deployment that are not routes, declared like route-table entries: what
 * they may touch (tables, capabilities), from which their IAM, environment and wiring derive.
 * Plain data, no AWS imports: the CDK app (infra/functions.ts) and the entries both read it.
 */
export interface EventFunctionDef extends Declaration {
  id: string;
  /** The Lambda entry file, relative to the repository root. */
  entry: string;
  /** Invoked asynchronously (events, schedules): gets retries and an on-failure destination. */
  async: boolean;
}

const sandboxHousekeeping = ['specs', 'ecs:run', 'ecs:stop', 'ecs:describe', 'ecs:task-definitions', 'efs:access-points'] as const;

/**
 * The HTTP API's REQUEST authorizer: it reads a key and records its last use (UpdateItem), reads
 * sessions, and checks conversation-scoped keys (the conversation's key version; the signing key,
 * sealed in the keys table and created on first use).
 */
export const authorizerFunction = {
  id: 'authorizer',
  entry: 'functions/auth/authorizer.ts',
  tables: { keys: 'write', conversations: 'read' },
  capabilities: ['seal', 'unseal'],
  async: false,
} as const satisfies EventFunctionDef;
/** The `$default` route: answers unknown paths and methods the way the local gateway does. */
export const fallbackFunction = { id: 'fallback', entry: 'functions/fallback.ts', tables: {}, async: false } as const satisfies EventFunctionDef;
/** ECS "Task State Change" (STOPPED) events for the sandbox cluster. */
export const ecsEventsFunction = {
  id: 'ecsEvents',
  entry: 'functions/sandboxes/ecs-events.ts',
  async: true,
  tables: { sandboxes: 'write' },
  capabilities: sandboxHousekeeping,
} as const satisfies EventFunctionDef;
/** Every minute: start time-outs, idle sandboxes, orphan tasks; conversation starts that stalled. */
export const sweeperFunction = {
  id: 'sweeper',
  entry: 'functions/sandboxes/sweeper.ts',
  async: true,
  tables: { sandboxes: 'write', startTasks: 'write' },
  capabilities: sandboxHousekeeping,
} as const satisfies EventFunctionDef;

/**
 * The bridge socket's `$connect` (infra/constructs/bridge-socket.ts): a sandbox program opens a
 * WebSocket with its own session key; the connection is recorded on its sandbox, where the routes
 * that queue commands push them (docs/architecture.md, "Bridge socket").
 */
export const bridgeSocketConnectFunction = {
  id: 'bridgeSocketConnect',
  entry: 'functions/bridge/socket-connect.ts',
  tables: { sandboxes: 'write' },
  async: false,
} as const satisfies EventFunctionDef;

export const eventFunctions = [authorizerFunction, fallbackFunction, ecsEventsFunction, sweeperFunction, bridgeSocketConnectFunction] as const;
