import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { envName, providerTokenSchema, gitProviderSchema } from '#shared/settings/model.ts';

/*
 * The late-2025 OpenHands web UI's secrets page and git provider calls (`/api/secrets`,
 * `/api/add-git-providers`, `/api/unset-provider-tokens`), on the same stored settings as
 * `POST /api/settings` `secrets_store`: custom secrets reach the agent's commands as environment
 * variables, provider tokens its git. Names and descriptions are shown, values never.
 */

const description = z.lazy(() => z.nullish(z.string().check(z.maxLength(1024))));
const secretIdParams = z.lazy(() => z.object({ secret_id: envName }));
const message = z.lazy(() => z.object({ message: z.string() }));
const newSecret = z.lazy(() =>
  z.object({
    name: envName,
    value: z.string().check(z.minLength(1, 'value must not be empty'), z.maxLength(8192)),
    description,
  }),
);
// The UI sends the name and description only: a value cannot be changed here (delete and create).
const renamedSecret = z.lazy(() => z.object({ name: envName, description }));

export const listSecrets = defineOperation(
  'listSecrets',
  () => ({
    response: z.object({
      custom_secrets: z.array(z.object({ name: z.string(), description: z.nullable(z.string()) })),
    }),
  }),
  async ({ userId }, { settings }) => ({ custom_secrets: await settings.customSecrets(userId) }),
);

export const createSecret = defineOperation(
  'createSecret',
  () => ({
    body: newSecret,
    response: message,
    errors: [409],
    example: { name: 'NPM_TOKEN', value: 'npm_...', description: 'publishes the package' },
  }),
  async ({ userId, body }, { settings }) => {
    await settings.createCustomSecret(userId, body.name, body.value, body.description ?? null);
    return { message: 'Secret created successfully' };
  },
);

export const updateSecret = defineOperation(
  'updateSecret',
  () => ({
    params: secretIdParams,
    body: renamedSecret,
    response: message,
    errors: [404, 409],
  }),
  async ({ userId, params, body }, { settings }) => {
    await settings.updateCustomSecret(userId, params.secret_id, body.name, body.description ?? null);
    return { message: 'Secret updated successfully' };
  },
);

export const deleteSecret = defineOperation(
  'deleteSecret',
  () => ({ params: secretIdParams, response: message, errors: [404] }),
  async ({ userId, params }, { settings }) => {
    await settings.deleteCustomSecret(userId, params.secret_id);
    return { message: 'Secret deleted successfully' };
  },
);

export const addGitProviders = defineOperation(
  'addGitProviders',
  () => ({
    body: z.object({ provider_tokens: z.partialRecord(gitProviderSchema, providerTokenSchema) }),
    response: message,
    example: { provider_tokens: { github: { token: 'ghp_...', host: 'github.com' } } },
  }),
  async ({ userId, body }, { settings }) => {
    // As OpenHands does: an empty token keeps the stored one (the UI sends "" for a provider it only re-hosts).
    const tokens = Object.fromEntries(
      Object.entries(body.provider_tokens).map(([p, t]) => [p, { ...t, token: t?.token || null }]),
    );
    await settings.save(userId, { secrets_store: { provider_tokens: tokens } });
    return { message: 'Git providers stored' };
  },
);

export const unsetProviderTokens = defineOperation(
  'unsetProviderTokens',
  () => ({ response: message }),
  async ({ userId }, { settings }) => {
    await settings.unsetProviderTokens(userId);
    return { message: 'Unset Git provider tokens' };
  },
);

/*
 * The same secrets where Agent Canvas's cloud mode keeps them (`/api/v1/secrets*`). Its save sends
 * the value with a POST whether the secret is new or not, so the POST here sets (creates or replaces);
 * a rename is its PUT first.
 */

export const canvasSearchSecrets = defineOperation(
  'canvasSearchSecrets',
  () => ({
    query: z.object({ page_id: z.optional(z.string().check(z.maxLength(2048))), limit: z.optional(z.string()) }),
    response: z.object({
      items: z.array(z.object({ name: z.string(), description: z.nullable(z.string()) })),
      // Every secret fits one page (they live in one settings item, under DynamoDB's 400 KB).
      next_page_id: z.null(),
    }),
  }),
  async ({ userId }, { settings }) => ({ items: await settings.customSecrets(userId), next_page_id: null }),
);

export const canvasSaveSecret = defineOperation(
  'canvasSaveSecret',
  () => ({
    body: newSecret,
    response: message,
    example: { name: 'NPM_TOKEN', value: 'npm_...', description: 'publishes the package' },
  }),
  async ({ userId, body }, { settings }) => {
    await settings.save(userId, {
      secrets_store: {
        custom_secrets: { [body.name]: { secret: body.value, description: body.description ?? null } },
      },
    });
    return { message: 'Secret stored' };
  },
);

export const canvasUpdateSecret = defineOperation(
  'canvasUpdateSecret',
  () => ({
    params: secretIdParams,
    body: renamedSecret,
    response: message,
    errors: [404, 409],
  }),
  async ({ userId, params, body }, { settings }) => {
    await settings.updateCustomSecret(userId, params.secret_id, body.name, body.description ?? null);
    return { message: 'Secret updated successfully' };
  },
);

export const canvasDeleteSecret = defineOperation(
  'canvasDeleteSecret',
  () => ({ params: secretIdParams, response: message, errors: [404] }),
  async ({ userId, params }, { settings }) => {
    await settings.deleteCustomSecret(userId, params.secret_id);
    return { message: 'Secret deleted successfully' };
  },
);
