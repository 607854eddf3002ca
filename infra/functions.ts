import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '#infra/bundle.ts';
import {
  authorizerFunction,
  ecsEventsFunction,
  eventFunctions,
  fallbackFunction,
  sweeperFunction,
  type EventFunctionDef,
} from '#shared/functions.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';

/** A Lambda function of the deployment that is not a route (declared in shared/functions.ts). */
export type ExtraFunction = EventFunctionDef;

export { authorizerFunction, ecsEventsFunction, fallbackFunction, sweeperFunction };
export const extraFunctions: readonly ExtraFunction[] = eventFunctions;

export const entryExists = (entry: string) => existsSync(resolve(REPO_ROOT, entry));

/** Every Lambda entry file of the deployment that exists in this checkout: one per route, plus the extras. */
export function lambdaEntries(): string[] {
  const all = [...(routes as readonly RouteDef[]).map((r) => r.entry), ...extraFunctions.map((f) => f.entry)];
  return [...new Set(all)].filter(entryExists);
}
