import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FunctionAccess } from '#infra/iam.ts';
import { REPO_ROOT } from '#infra/bundle.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';

/** A Lambda function of the deployment that is not a route: its entry and what it may touch. */
export interface ExtraFunction extends FunctionAccess {
  id: string;
  entry: string;
  /** Invoked asynchronously (events, schedules): gets retries and an on-failure destination. */
  async: boolean;
}

const sandboxEventAccess: FunctionAccess = {
  tables: { sandboxes: 'write', keys: 'read' },
  capabilities: ['ecs:run', 'ecs:stop', 'ecs:describe', 'ecs:task-definitions', 'efs:access-points'],
};

/**
 * The HTTP API's REQUEST authorizer: it reads a key and records its last use (UpdateItem), reads
 * sessions, and checks conversation-scoped keys (the conversation's key version; the signing key,
 * sealed in the keys table and created on first use).
 */
export const authorizerFunction: ExtraFunction = {
  id: 'authorizer',
  entry: 'functions/auth/authorizer.ts',
  tables: { keys: 'write', conversations: 'read' },
  capabilities: ['seal', 'unseal'],
  async: false,
};
/** The `$default` route: answers unknown paths and methods the way the local gateway does. */
export const fallbackFunction: ExtraFunction = { id: 'fallback', entry: 'functions/fallback.ts', tables: {}, async: false };
/** ECS "Task State Change" (STOPPED) events for the sandbox cluster. */
export const ecsEventsFunction: ExtraFunction = { id: 'ecsEvents', entry: 'functions/sandboxes/ecs-events.ts', async: true, ...sandboxEventAccess };
/** Every minute: start time-outs, idle sandboxes, orphan tasks; conversation starts that stalled. */
export const sweeperFunction: ExtraFunction = {
  id: 'sweeper',
  entry: 'functions/sandboxes/sweeper.ts',
  async: true,
  ...sandboxEventAccess,
  tables: { ...sandboxEventAccess.tables, startTasks: 'write' },
};

export const extraFunctions = [authorizerFunction, fallbackFunction, ecsEventsFunction, sweeperFunction] as const;

export const entryExists = (entry: string) => existsSync(resolve(REPO_ROOT, entry));

/** Every Lambda entry file of the deployment that exists in this checkout: one per route, plus the extras. */
export function lambdaEntries(): string[] {
  const all = [...(routes as readonly RouteDef[]).map((r) => r.entry), ...extraFunctions.map((f) => f.entry)];
  return [...new Set(all)].filter(entryExists);
}
