import type * as z from '#shared/zod.ts';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import type { RouteDef, RouteSchemas } from '#shared/http/route.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import type { StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import { routes } from '#shared/routes.ts';
import type { Services } from '#shared/services.ts';

type AnyRoute = (typeof routes)[number];
export type RouteId = AnyRoute['id'];
type Parsed<R, K extends string> = R extends { [P in K]: infer S extends z.core.$ZodType } ? z.output<S> : undefined;

/** What a handler gets: validated input and who is calling. */
export interface Request<R> {
  body: Parsed<R, 'body'>;
  query: Parsed<R, 'query'>;
  params: Parsed<R, 'params'>;
  /** The caller's user id (empty on routes without user auth). */
  userId: string;
  /** How the caller signed in (API key, session, conversation key), from the authorizer. */
  auth: AuthorizerContext;
  requestId: string;
  /** This API's public base URL, as the caller reached it (or `PUBLIC_BASE_URL`), for links and the bridge. */
  baseUrl: string;
  /** The JSON body as it arrived, before validation stripped unknown members. */
  rawBody: unknown;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The caller's address as per-address limits count it (shared/http/client-address.ts). */
  clientAddress: string;
  /**
   * On sandbox routes, the record of the sandbox whose credential the request carries, as the
   * wrapper's key check read it (any status; not deleted): the operation need not read it again.
   */
  sandbox?: SandboxRecord;
  /** On pool routes, the standby whose pool credential the request carries (read by the wrapper's key check). */
  standby?: StandbyRecord;
}

/** A response other than 200-with-JSON: another status, extra headers, or a non-JSON body. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export interface Operation {
  route: RouteDef;
  /** What the wrapper validates the request with, and the OpenAPI document shows (built on first use). */
  readonly schemas: RouteSchemas;
  run(req: Request<unknown>, services: Services): Promise<unknown>;
}

/**
 * Binds a handler to its route-table entry and to its route's schemas, so its input types come
 * from those schemas. The schemas are given as a function and built on first use: a Lambda builds
 * only its own route's, when its first request arrives, not every schema its modules import.
 */
export function defineOperation<I extends RouteId, S extends RouteSchemas>(
  id: I,
  build: () => S,
  run: (req: Request<S>, services: Services) => Promise<unknown>,
): Operation {
  const route: RouteDef | undefined = routes.find((r) => r.id === id);
  if (!route) throw new Error(`No route ${id}`);
  let schemas: RouteSchemas | undefined;
  return {
    route,
    get schemas() {
      schemas ??= build();
      return schemas;
    },
    run: run as Operation['run'],
  };
}
