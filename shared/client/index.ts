import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { idempotentRoutes, type components, type paths } from './schema.ts';

/*
 * The typed client of the Agent Conversation Service: openapi-fetch over the types openapi-typescript
 * generates from the API's own OpenAPI document (./schema.ts, `npm run generate:client`). Every path,
 * parameter, body and answer is typed from the document; nothing here is written by hand per route.
 * On top: the credential, an Idempotency-Key on every create that takes one, retries that honour
 * Retry-After (reusing that key, so a retried create creates once), and a pager over `next_page_id`.
 */

export type { components, paths } from './schema.ts';
/** A named schema of the document, e.g. `Schema<'Error'>`. */
export type Schema<N extends keyof components['schemas']> = components['schemas'][N];
/** The JSON body of a path's success answer, e.g. `Answer<'/api/v1/sandboxes/search', 'get'>`. */
export type Answer<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : never
  : never;
/** The JSON request body of a path, e.g. `RequestBody<'/api/settings', 'post'>`. */
export type RequestBody<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

export interface ApiClientOptions {
  /** Where the API is: `http://127.0.0.1:3000` locally, the stack's PublicUrl on AWS. */
  baseUrl: string;
  /** An API key, sent as `X-Session-API-Key`. */
  key?: string;
  /** A bearer credential (an API key or a JWT of the configured issuer), sent as `Authorization: Bearer`. */
  token?: string;
  /** Attempts per request, the first included (default 4): see `retryingFetch`. */
  attempts?: number;
  /** The longest wait between attempts, in ms (default 30 000); a longer Retry-After gives up instead. */
  maxWaitMs?: number;
  /** The fetch to call with each attempt's Request (default the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** Passed to openapi-fetch as they are (headers, querySerializer...). */
  clientOptions?: Omit<ClientOptions, 'baseUrl' | 'fetch'>;
}

export type ApiClient = Client<paths, 'application/json'>;

/** The typed client: `client.GET('/api/v1/users/me')`, `client.POST('/api/keys', { body: { name } })`... */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const headers: Record<string, string> = {};
  if (options.key) headers['X-Session-API-Key'] = options.key;
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const client = createClient<paths, 'application/json'>({
    ...options.clientOptions,
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...headers, ...(options.clientOptions?.headers as Record<string, string> | undefined) },
    fetch: retryingFetch({
      attempts: options.attempts ?? 4,
      maxWaitMs: options.maxWaitMs ?? 30_000,
      fetch: options.fetch ?? ((input) => globalThis.fetch(input)),
    }),
  });
  return client;
}

const idempotent = new Set(idempotentRoutes);
/** The route template a request's path matches (`/api/v1/sandboxes/{sandbox_id}` for `/api/v1/sandboxes/abc`). */
function takesIdempotencyKey(method: string, pathname: string): boolean {
  for (const route of idempotent) {
    const [m, template] = route.split(' ') as [string, string];
    if (m !== method) continue;
    // At the end of the path: the base URL may have a prefix of its own.
    if (new RegExp(`${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(pathname)) return true;
  }
  return false;
}

/** Seconds or an HTTP date, as milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A fetch that retries what is safe to repeat: a GET, HEAD, PUT or DELETE, or a create carrying an
 * Idempotency-Key (one is added to each create that takes one, unless the caller set it, and every
 * attempt sends the same). It retries on 429 and 503, on 409 with Retry-After (an idempotent repeat
 * whose first request is still running), and on network errors; it waits what Retry-After says
 * (seconds or a date), else 0.5 s, 1 s, 2 s... It gives up after `attempts`, or at once when the
 * wait would exceed `maxWaitMs`, and then answers the last response (or throws the last error).
 */
export function retryingFetch(options: {
  attempts: number;
  maxWaitMs: number;
  fetch: (request: Request) => Promise<Response>;
}): (request: Request) => Promise<Response> {
  return async (request) => {
    const path = new URL(request.url).pathname;
    if (
      request.method === 'POST' &&
      takesIdempotencyKey(request.method, path) &&
      !request.headers.has('idempotency-key')
    )
      request.headers.set('Idempotency-Key', crypto.randomUUID());
    const repeatable =
      ['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key');
    for (let attempt = 1; ; attempt++) {
      const last = !repeatable || attempt >= options.attempts;
      let wait: number | undefined;
      try {
        const response = await options.fetch(last ? request : request.clone());
        const after = retryAfterMs(response.headers.get('retry-after'));
        const retriable =
          response.status === 429 || response.status === 503 || (response.status === 409 && after !== undefined);
        if (last || !retriable) return response;
        wait = after ?? 500 * 2 ** (attempt - 1);
        if (wait > options.maxWaitMs) return response;
        await response.body?.cancel();
      } catch (err) {
        if (last || (err as Error).name === 'AbortError') throw err;
        wait = 500 * 2 ** (attempt - 1);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  };
}

/** A page of a list: what every paginated route answers. */
export interface Page<T> {
  items: T[];
  next_page_id: string | null;
}

/**
 * Every item of a paginated list, page after page: `fetchPage` gets the previous page's
 * `next_page_id` (undefined for the first) and returns openapi-fetch's result; an error answer throws.
 *
 *     for await (const sandbox of pages((page_id) =>
 *       client.GET('/api/v1/sandboxes/search', { params: { query: { page_id, limit: 100 } } })))
 *       console.log(sandbox.id);
 */
export async function* pages<T>(
  fetchPage: (pageId: string | undefined) => Promise<{ data?: Page<T>; error?: unknown; response: Response }>,
): AsyncGenerator<T> {
  let pageId: string | undefined;
  do {
    const { data, error, response } = await fetchPage(pageId);
    if (!data) throw new ApiClientError(response.status, error);
    yield* data.items;
    pageId = data.next_page_id ?? undefined;
  } while (pageId);
}

/** An error answer, with its status and the body the API sent (`{"detail": ...}`). */
export class ApiClientError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const detail = (body as { detail?: unknown } | undefined)?.detail;
    super(
      `HTTP ${status}${detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`,
    );
    this.name = 'ApiClientError';
  }
}
