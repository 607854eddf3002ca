import type { z } from 'zod';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';
import type { Services } from '#shared/services.ts';

type AnyRoute = (typeof routes)[number];
export type RouteId = AnyRoute['id'];
type RouteOf<I extends RouteId> = Extract<AnyRoute, { id: I }>;
type Parsed<R, K extends string> = R extends { [P in K]: infer S extends z.ZodType } ? z.output<S> : undefined;

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
  run(req: Request<unknown>, services: Services): Promise<unknown>;
}

/** Binds a handler to its route-table entry, so its input types come from the route's schemas. */
export function defineOperation<I extends RouteId>(
  id: I,
  run: (req: Request<RouteOf<I>>, services: Services) => Promise<unknown>,
): Operation {
  const route = routes.find((r) => r.id === id);
  if (!route) throw new Error(`No route ${id}`);
  return { route, run: run as Operation['run'] };
}
