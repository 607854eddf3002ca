import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageLimit } from '#shared/http/query.ts';
import { appConfig, appConfigSchema, llmModels } from '#shared/options/model.ts';

/** What the OpenHands web UI reads before anything else: its mode and flags, the models to offer. */
export const getOptionsConfig = defineOperation(
  'getOptionsConfig',
  () => ({ response: appConfigSchema }),
  async () => appConfig,
);

export const getOptionsModels = defineOperation(
  'getOptionsModels',
  () => ({ response: z.array(z.string()) }),
  // Strings, as the OpenHands web UI reads them: the platform models first (marked `platform: true` in
  // GET /api/v1/config/models/search, whose items are objects), then the user-key models.
  async (_, { platformLlms }) => [...platformLlms.names(), ...llmModels()],
);

/** One model of the list as Agent Canvas's model picker reads it: `openai/gpt-4o` is provider `openai`, name `gpt-4o`. */
function modelItem(model: string, platform = false) {
  const slash = model.indexOf('/');
  return {
    // Paid by the deployment through its LLM gateway: no API key of the user's (docs/platform-llms.md).
    platform,
    provider: slash > 0 ? model.slice(0, slash) : null,
    name: slash > 0 ? model.slice(slash + 1) : model,
    // The list is the deployment's own (LLM_MODELS or the built-in one): every entry is one it vouches for.
    verified: true,
    free: false,
    default: false,
  };
}

const searchQuery = z.lazy(() =>
  z.object({
    query: z.optional(z.string().check(z.maxLength(256))),
    verified__eq: z.optional(z.stringbool()),
    provider__eq: z.optional(z.string().check(z.maxLength(128))),
    // A plain offset: the list is public and short, so it needs no signed cursor.
    page_id: z.optional(z.string().check(z.regex(/^\d{1,6}$/, 'page_id must be a page_id this API returned'))),
    limit: pageLimit,
  }),
);

function page<T>(items: T[], q: { page_id?: string; limit: number }) {
  const start = Number(q.page_id ?? 0);
  const end = start + q.limit;
  return { items: items.slice(start, end), next_page_id: end < items.length ? String(end) : null };
}

const matches = (name: string, query: string | undefined) => !query || name.toLowerCase().includes(query.toLowerCase());

/** `GET /api/v1/config/models/search`: the models of `/api/options/models` in the app server's page shape. */
export const canvasSearchModels = defineOperation(
  'canvasSearchModels',
  () => ({
    query: searchQuery,
    response: z.object({
      items: z.array(
        z.object({
          platform: z.boolean(),
          provider: z.nullable(z.string()),
          name: z.string(),
          verified: z.boolean(),
          free: z.boolean(),
          default: z.boolean(),
        }),
      ),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ query }, { platformLlms }) =>
    page(
      [...platformLlms.names().map((m) => modelItem(m, true)), ...llmModels().map((m) => modelItem(m))].filter(
        (m) =>
          matches(m.name, query.query) &&
          (query.provider__eq === undefined || m.provider === query.provider__eq) &&
          (query.verified__eq === undefined || m.verified === query.verified__eq),
      ),
      query,
    ),
);

/** `GET /api/v1/config/providers/search`: the providers of those models. */
export const canvasSearchProviders = defineOperation(
  'canvasSearchProviders',
  () => ({
    query: searchQuery,
    response: z.object({
      items: z.array(z.object({ name: z.string(), verified: z.boolean() })),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ query }) =>
    page(
      [...new Set(llmModels().flatMap((m) => modelItem(m).provider ?? []))]
        .map((name) => ({ name, verified: true }))
        .filter((p) => matches(p.name, query.query) && (query.verified__eq === undefined || query.verified__eq)),
      query,
    ),
);

/**
 * `GET /api/v1/skills/search`: the agent here has no skill catalogue (no microagents, no
 * marketplace), so the page is empty; Agent Canvas shows "no skills".
 */
export const canvasSearchSkills = defineOperation(
  'canvasSearchSkills',
  () => ({
    query: z.object({ page_id: z.optional(z.string().check(z.maxLength(2048))), limit: z.optional(z.string()) }),
    response: z.object({ items: z.array(z.unknown()), next_page_id: z.null() }),
  }),
  async () => ({ items: [], next_page_id: null }),
);
