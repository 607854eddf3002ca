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

// prices (and table usage): a sandbox that stops running gets its closing record (docs/billing.md).
const sandboxHousekeeping = [
  'specs',
  'prices',
  'ecs:run',
  'ecs:stop',
  'ecs:describe',
  'ecs:task-definitions',
  'snapshots:delete',
] as const;

/**
 * The HTTP API's REQUEST authorizer: it reads a key and records its last use (UpdateItem), reads
 * sessions, and checks conversation-scoped keys (the conversation's key version; the signing key,
 * sealed in the keys table and created on first use).
 */
export const authorizerFunction = {
  id: 'authorizer',
  entry: 'functions/auth/authorizer.ts',
  // users, orgs, invitations: a caller's account, made on first use (a personal organization, or an
  // invite-only sign-up joining the inviting one); auditLog: sign-ups.
  tables: {
    keys: 'write',
    conversations: 'read',
    users: 'write',
    orgs: 'write',
    invitations: 'write',
    auditLog: 'append',
  },
  // plans: the caller's requests per minute (shared/auth/request-rate.ts).
  capabilities: ['seal', 'unseal', 'signin', 'plans'],
  async: false,
} as const satisfies EventFunctionDef;
/** The `$default` route: answers unknown paths and methods the way the local gateway does. */
export const fallbackFunction = {
  id: 'fallback',
  entry: 'functions/fallback.ts',
  tables: {},
  async: false,
} as const satisfies EventFunctionDef;
/**
 * ECS "Task State Change" events for the sandbox cluster: STOPPED reconciles records; a warm-pool
 * standby's task is resolved through its pool item (one GetItem), and a Spot standby lost is replaced.
 * It claims no standby, so it needs no `pool:refill` (the asynchronous refill after a claim, and the
 * tag a claimed standby gets): a replacement is started here, with `ecs:run`.
 */
export const ecsEventsFunction = {
  id: 'ecsEvents',
  entry: 'functions/sandboxes/ecs-events.ts',
  async: true,
  tables: { sandboxes: 'write', pool: 'write', usage: 'write' },
  capabilities: sandboxHousekeeping,
} as const satisfies EventFunctionDef;
/** Invoked asynchronously after each claim: starts standbys up to the pool's size (an interrupted Spot standby is replaced by the ECS events function itself). */
export const poolRefillFunction = {
  id: 'poolRefill',
  entry: 'functions/pool/refill.ts',
  async: true,
  tables: { pool: 'write' },
  capabilities: ['specs', 'ecs:run', 'ecs:stop', 'ecs:describe'],
} as const satisfies EventFunctionDef;
/** Every minute: start time-outs, idle sandboxes, orphan tasks; conversation starts that stalled. */
export const sweeperFunction = {
  id: 'sweeper',
  entry: 'functions/sandboxes/sweeper.ts',
  async: true,
  // streamConnections, stream:push: pending stream connections past their auth deadline are dropped.
  // pool: the warm pool is topped up, drained and its lost standbys replaced (in process, with ecs:run);
  // pool:refill, users, orgs: a retried start claims a standby (tagged with its sandbox, then the refill
  // asked for), and a suspended account never does.
  // events: stored event bytes summed per organization.
  // usage: closing records, and RUNNING sandboxes that stopped heartbeating metered to their last sign of life.
  tables: {
    sandboxes: 'write',
    startTasks: 'write',
    streamConnections: 'write',
    pool: 'write',
    users: 'read',
    orgs: 'read',
    events: 'write',
    usage: 'write',
  },
  // events:grown-bytes: the Scan of the counters whose stored event bytes grew since the last sum.
  // commands:push: a retried start's claim wakes its standby on the pool socket.
  capabilities: [...sandboxHousekeeping, 'stream:push', 'pool:refill', 'events:grown-bytes', 'commands:push'],
} as const satisfies EventFunctionDef;

/**
 * The bridge socket's `$connect` (infra/constructs/bridge-socket.ts): a sandbox program opens a
 * WebSocket with its own session key; the connection is recorded on its sandbox, where the routes
 * that queue commands push them (docs/architecture.md, "Bridge socket"). pool: a warm-pool standby's
 * pool socket, recorded on its pool item with its pool credential (the claim's wake-up goes there).
 */
export const bridgeSocketConnectFunction = {
  id: 'bridgeSocketConnect',
  entry: 'functions/bridge/socket-connect.ts',
  tables: { sandboxes: 'write', pool: 'write' },
  async: false,
} as const satisfies EventFunctionDef;

/**
 * The event stream's WebSocket API (AWS only; locally the gateway serves the stream itself).
 * `$connect` decides access (shared/stream/access.ts: cookie, the conversation-scoped key or a
 * ticket in the query; it reads sessions and keys, redeems tickets, checks scoped keys), records the
 * connection and asks `streamResend` to send what the client asked for, since `$connect` itself
 * cannot send before it returns.
 */
export const streamConnectFunction = {
  id: 'streamConnect',
  entry: 'functions/stream/connect.ts',
  async: false,
  // users, orgs, invitations, auditLog: the caller's account, as the authorizer reads (and first makes) it.
  tables: {
    keys: 'write',
    conversations: 'read',
    events: 'read',
    streamConnections: 'write',
    users: 'write',
    orgs: 'write',
    invitations: 'write',
    auditLog: 'append',
  },
  capabilities: ['seal', 'unseal', 'stream:resend', 'signin', 'plans'],
} as const satisfies EventFunctionDef;
/** `$disconnect`: forgets the connection. */
export const streamDisconnectFunction = {
  id: 'streamDisconnect',
  entry: 'functions/stream/disconnect.ts',
  async: false,
  tables: { streamConnections: 'write' },
} as const satisfies EventFunctionDef;
/**
 * `$default`: a message a client sends on the stream (the OpenHands V1 UI sends user messages this
 * way), relayed as the `sendMessage` route does it, under the same tables; keep-alive pings take
 * the mock `ping` route and run no function.
 */
export const streamMessageFunction = {
  id: 'streamMessage',
  entry: 'functions/stream/message.ts',
  async: false,
  // A pending connection's first message is its auth frame: judged as `$connect` judges credentials (keys, seal;
  // a sign-in token: signin, users, orgs, invitations, auditLog; the plan's socket caps: plans), then recorded and
  // resent like a credentialed one (events, stream:resend), or dropped (stream:push: DeleteConnection).
  tables: {
    keys: 'write',
    conversations: 'read',
    events: 'read',
    sandboxes: 'write',
    commands: 'write',
    streamConnections: 'write',
    users: 'write',
    orgs: 'write',
    invitations: 'write',
    auditLog: 'append',
  },
  // The relayed message is a command for the sandbox, pushed over the bridge socket like sendMessage's.
  capabilities: ['commands:push', 'seal', 'unseal', 'stream:resend', 'stream:push', 'signin', 'plans'],
} as const satisfies EventFunctionDef;
/**
 * Invoked asynchronously by `$connect`: once the connection is open, sends the stored events it asked
 * for (resend_all, after_seq). stream:resend: a replay longer than one invocation invokes it again.
 */
export const streamResendFunction = {
  id: 'streamResend',
  entry: 'functions/stream/resend.ts',
  async: true,
  tables: { events: 'read', streamConnections: 'write' },
  capabilities: ['stream:push', 'stream:resend'],
} as const satisfies EventFunctionDef;

/**
 * Invoked asynchronously (by the sandbox delete, ECS events and the sweeper) once a deleted
 * sandbox's last task stopped: removes its snapshot objects, so the functions that stop tasks carry
 * no S3 client. Lambda retries it, then sends it to the on-failure queue.
 */
export const sandboxSnapshotsDeleteFunction = {
  id: 'sandboxSnapshotsDelete',
  entry: 'functions/sandboxes/snapshots-delete.ts',
  async: true,
  tables: {},
  capabilities: ['s3:workspaces'],
} as const satisfies EventFunctionDef;

/**
 * The daily FOCUS export (docs/billing.md): an EventBridge schedule just after midnight UTC writes the previous
 * UTC day's ledger to the operator's bucket. It reads the records (usage), organizations' names (orgs, through
 * the account store, which reads users and the sign-in settings) and writes one object (billing:export); with
 * Stripe configured it then reports that day to Stripe (stripe; usage write: the `reported` marks).
 */
export const billingExportFunction = {
  id: 'billingExport',
  entry: 'functions/billing/export.ts',
  async: true,
  tables: { usage: 'write', users: 'read', orgs: 'read' },
  // prices: the daily close of open storage holdings (docs/billing.md, "Workspace storage").
  capabilities: ['signin', 'billing:export', 'stripe', 'prices'],
} as const satisfies EventFunctionDef;

/**
 * Every night (infra/constructs/usage-reconcile.ts; locally on a timer): the last two days' usage totals
 * rewritten where their records differ, the running-slot and conversation counters recounted
 * (shared/usage/reconcile.ts, docs/billing.md "The daily reconcile").
 */
export const usageReconcileFunction = {
  id: 'usageReconcile',
  entry: 'functions/usage/reconcile.ts',
  async: true,
  // users, events, startTasks, keys, settings (and conversations): deleted accounts' data removed after the
  // reconcile (AccountPurge, docs/sign-in.md). Here, not in the sweeper: the sweeper's role policy is at its size limit.
  tables: {
    usage: 'write',
    sandboxes: 'write',
    conversations: 'write',
    users: 'write',
    events: 'write',
    startTasks: 'write',
    keys: 'write',
    settings: 'write',
  },
} as const satisfies EventFunctionDef;

export const eventFunctions = [
  authorizerFunction,
  fallbackFunction,
  ecsEventsFunction,
  sweeperFunction,
  streamConnectFunction,
  streamDisconnectFunction,
  streamMessageFunction,
  streamResendFunction,
  bridgeSocketConnectFunction,
  sandboxSnapshotsDeleteFunction,
  poolRefillFunction,
  billingExportFunction,
  usageReconcileFunction,
] as const;
