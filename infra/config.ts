import { existsSync } from 'node:fs';
import { parsePlans } from '#shared/plans/model.ts';
import { parsePrices } from '#shared/usage/prices.ts';
import { parsePlatformModels } from '#shared/llm/platform-models.ts';
import * as z from 'zod';
import { fargateSizeProblem } from '#shared/sandboxes/runtime/fargate-sizes.ts';

/**
 * The deployment's configuration: CDK context keys (in cdk.json, or `-c key=value` on the command
 * line, where every value arrives as a string: numbers, booleans and JSON lists are coerced).
 * Checked once at synth; a bad value fails with the key's name.
 */

/** CloudWatch Logs accepts only these retention periods. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

const fromJson = (value: unknown) => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value; // left as a string, so the schema reports what it expected
  }
};

const bool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const specSchema = z
  .strictObject({
    /** The spec id clients see (`sandbox_spec_id`). */
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'lower-case letters, digits and dashes, at most 32'),
    cpu: z.number().int(),
    memory: z.number().int(),
    /** Fargate Spot for this spec; defaults to the `sandboxSpot` key. */
    spot: z.boolean().optional(),
    /** With Spot: start on on-demand Fargate when Spot has no capacity (the sandbox's record says so). */
    spotFallback: z.boolean().default(false),
    command: z.array(z.string()).nullable().default(null),
    initialEnv: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
    workingDir: z.string().startsWith('/').default('/workspace'),
    /** A warm pool of standby tasks (shared/sandboxes/pool.ts); off unless given. */
    warmPool: z
      .strictObject({
        size: z.number().int().min(0).max(50),
        idleMinutes: z.number().int().min(1).max(10_080).default(30),
        spot: z.boolean().default(false),
      })
      .optional(),
  })
  .superRefine((spec, ctx) => {
    const problem = fargateSizeProblem(spec.cpu, spec.memory);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
  });

/** SAML's usual email attribute (the WS-Federation claims namespace). */
export const SAML_EMAIL_ATTRIBUTE = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress';
/** A federated provider's name, as Cognito and the hosted page show it. */
const federatedName = { name: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/) };
/** A CloudFormation dynamic reference to Secrets Manager (`{{resolve:secretsmanager:...}}`): a reference, never a value. */
const DYNAMIC_SECRET_REFERENCE = /^\{\{resolve:secretsmanager:[^}]+\}\}$/;
/**
 * An OAuth client's id and the name of the Secrets Manager secret holding its secret. `clientSecret`
 * (the older key) is accepted only as a dynamic reference: a plaintext secret would be in the template.
 */
const clientCredentials = {
  clientId: z.string().min(1),
  clientSecretName: z
    .string()
    .regex(/^[A-Za-z0-9/_+=.@-]{1,512}$/, 'the name (or ARN) of a Secrets Manager secret')
    .optional(),
  clientSecret: z
    .string()
    .regex(
      DYNAMIC_SECRET_REFERENCE,
      'a plaintext client secret would be in the template: put it in Secrets Manager and name it in clientSecretName',
    )
    .optional(),
};

export const configSchema = z.object({
  /** Optional: without them the stack is environment-agnostic and deploys where the CLI's credentials point. */
  account: z
    .string()
    .regex(/^\d{12}$/, 'a 12-digit AWS account id')
    .optional(),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as eu-west-1')
    .optional(),
  stackName: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,100}$/, 'letters, digits and dashes, starting with a letter')
    .default('AgentConversationService'),
  sandboxIdleMinutes: int(1, 1440).default(30),
  sandboxStartTimeoutSeconds: int(30, 3600).default(600),
  maxRunningSandboxes: int(1, 1000).default(5),
  sandboxSpot: bool.default(false),
  sandboxSpecs: z
    .preprocess(
      fromJson,
      z
        .array(specSchema)
        .min(1)
        .refine((specs) => new Set(specs.map((s) => s.id)).size === specs.length, 'spec ids must be unique'),
    )
    .default([
      {
        id: 'default',
        cpu: 1024,
        memory: 2048,
        spotFallback: false,
        command: null,
        initialEnv: {},
        workingDir: '/workspace',
      },
    ]),
  logRetentionDays: z.coerce
    .number()
    .refine((d) => (LOG_RETENTION_DAYS as readonly number[]).includes(d), `one of ${LOG_RETENTION_DAYS.join(', ')}`)
    .default(30),
  /** Steady-state requests per second and burst for the whole API stage. */
  apiThrottleRateLimit: z.coerce.number().positive().max(10_000).default(50),
  apiThrottleBurstLimit: int(1, 5000).default(100),
  /** Browser origins allowed by CORS; empty = no CORS (API clients that are not browsers need none). */
  corsAllowedOrigins: z
    .preprocess(
      fromJson,
      z.array(
        z.union([
          z.literal('*'),
          z.url({ protocol: /^https?$/ }).regex(/^https?:\/\/[^/]+$/, 'an origin: scheme and host, no path'),
        ]),
      ),
    )
    .default([]),
  /**
   * The plans (shared/plans/model.ts, the contracts page's schema), as JSON; unset: the built-in
   * defaults (the `free` plan of config/plans.json). Checked here with the key named, and given to
   * the functions that declare the `plans` capability as PLANS.
   */
  plans: z.preprocess(fromJson, z.unknown()).optional(),
  /**
   * Compute prices (shared/usage/prices.ts: Fargate on-demand and Spot per vCPU-hour and GB-hour per
   * region, a default region, a markup), as JSON; unset: the built-in ones (config/prices.json's).
   * Checked here with the key named, and given to the functions that declare `prices` as PRICES.
   */
  prices: z.preprocess(fromJson, z.unknown()).optional(),
  /**
   * Platform models (shared/llm/platform-models.ts, docs/platform-llms.md), as JSON; unset: none
   * offered. Each model's key is `api_key_arn` (an SSM SecureString or a Secrets Manager secret: the
   * ARN, never the value). Checked here with the key named; given as PLATFORM_LLMS to the functions
   * that declare `platform-llms`, and its ARNs are all the gateway may read.
   */
  platformLlms: z.preprocess(fromJson, z.unknown()).optional(),
  /**
   * The optional Stripe adapter (docs/billing.md, "Stripe"), as JSON: `apiKeyArn` (an SSM SecureString or a Secrets
   * Manager secret holding the secret key: the ARN, never the value), `apiBase` and `meterEventsBase` (Stripe's own by
   * default). Unset: no Stripe; reports answer 409.
   */
  stripe: z
    .preprocess(
      fromJson,
      z
        .object({
          apiKeyArn: z
            .string()
            .regex(/^arn:aws[a-z-]*:(ssm|secretsmanager):/, 'an SSM parameter or Secrets Manager ARN'),
          apiBase: z.string().url().optional(),
          meterEventsBase: z.string().url().optional(),
        })
        .strict(),
    )
    .optional(),
  /** Days the usage ledger's records are kept (DynamoDB TTL; totals are kept): docs/billing.md, "Retention". */
  usageRetentionDays: int(1, 3650).default(400),
  /** Calls in flight per organization at the LLM gateway (429 beyond). */
  llmConcurrentCallsPerOrg: int(1, 10_000).default(32),
  /**
   * Reserved concurrency for the event-ingest function only (a sandbox flood then throttles itself,
   * not every other function of the account). Unset by default: Lambda refuses a reservation that
   * leaves less than 100 unreserved, and new accounts often have a quota of 10 (docs/deploy.md).
   */
  ingestReservedConcurrency: int(1, 100_000).optional(),
  /**
   * Sign-in (docs/sign-in.md). An external OpenID issuer (`oidcIssuer` + `oidcAudience`, and
   * `oidcClientId` when the console's client differs from the audience); without one, a Cognito user
   * pool of the stack's own (`cognito`, default true; false: keys only).
   */
  oidcIssuer: z.url({ protocol: /^https$/ }).optional(),
  oidcAudience: z.string().min(1).max(256).optional(),
  oidcClientId: z.string().min(1).max(256).optional(),
  /**
   * Origins the console's page may fetch besides the issuer's own: an external issuer whose token
   * endpoint is on another origin (its discovery document's `token_endpoint`) needs it in `connect-src`.
   */
  oidcConnectOrigins: z
    .preprocess(
      fromJson,
      z.array(z.url({ protocol: /^https$/ }).regex(/^https:\/\/[^/]+$/, 'an origin: https and a host, no path')),
    )
    .default([]),
  cognito: bool.default(true),
  /** The Cognito hosted domain's prefix (unique per region across accounts); default: stack name and a hash of the account. */
  cognitoDomainPrefix: z
    .string()
    .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'lower-case letters, digits and dashes, at most 63')
    .refine((p) => !/aws|amazon|cognito/.test(p), 'must not contain aws, amazon or cognito')
    .optional(),
  /**
   * Federation through the Cognito pool: Google, any OpenID Connect issuer and any SAML IdP
   * (docs/sign-in.md, "On AWS"). A client secret is named, never given: `clientSecretName` is a Secrets
   * Manager secret the template reads by a dynamic reference, so no secret is in the template.
   */
  cognitoIdentityProviders: z
    .preprocess(
      fromJson,
      z.array(
        z.discriminatedUnion('type', [
          z.strictObject({ type: z.literal('google'), ...federatedName, ...clientCredentials }),
          z.strictObject({
            type: z.literal('oidc'),
            ...federatedName,
            ...clientCredentials,
            issuerUrl: z.url({ protocol: /^https$/ }),
          }),
          z
            .strictObject({
              type: z.literal('saml'),
              ...federatedName,
              /** The IdP's metadata document: a URL Cognito fetches, or a file read at synthesis (its content goes in the template: metadata is public). */
              metadataUrl: z.url({ protocol: /^https$/ }).optional(),
              metadataFile: z.string().min(1).optional(),
              /** The SAML attribute holding the email (default: the claims namespace's emailaddress). */
              emailAttribute: z.string().min(1).default(SAML_EMAIL_ATTRIBUTE),
              /** An attribute the IdP sets to `true` for a verified email; without one, people from it have no verified email. */
              emailVerifiedAttribute: z.string().min(1).optional(),
              /** Email domains or ids that route a person to this IdP from the hosted page. */
              identifiers: z.array(z.string().min(1).max(40)).max(50).optional(),
            })
            .refine((p) => (p.metadataUrl === undefined) !== (p.metadataFile === undefined), {
              message: 'a SAML provider needs exactly one of metadataUrl and metadataFile',
              path: ['metadataUrl'],
            }),
        ]),
      ),
    )
    .default([]),
  signupMode: z.enum(['open', 'invite', 'closed']).default('invite'),
  /** Operators: verified emails of the issuer, or `<issuer>|<sub>` (and the Cognito group `operators`). */
  operators: z.preprocess(fromJson, z.array(z.string().min(3).max(320))).default([]),
  auditRetentionDays: int(1, 3650).default(365),
  /** Optional address subscribed to the alarm topic. */
  alarmEmail: z.email().optional(),
});

export type Config = z.infer<typeof configSchema>;
export type SandboxSpecConfig = Config['sandboxSpecs'][number];

/** Reads every configuration key through `get` (e.g. `app.node.tryGetContext`) and validates them. */
export function loadConfig(get: (key: string) => unknown): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = get(key);
    if (value !== undefined && value !== null && value !== '') raw[key] = value;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const [key, ...rest] = issue.path.map(String);
      return `context key "${key}"${rest.length ? ` (at ${rest.join('.')})` : ''}: ${issue.message}`;
    });
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  if (parsed.data.plans !== undefined) {
    try {
      parsePlans(parsed.data.plans, 'context key "plans"');
    } catch (err) {
      throw new Error(`Invalid configuration: ${(err as Error).message.replace(/^Configuration error: /, '')}`);
    }
  }
  if (parsed.data.prices !== undefined) {
    try {
      parsePrices(parsed.data.prices, 'context key "prices"');
    } catch (err) {
      throw new Error(`Invalid configuration: ${(err as Error).message.replace(/^Configuration error: /, '')}`);
    }
  }
  if (parsed.data.platformLlms !== undefined) {
    try {
      const models = parsePlatformModels(parsed.data.platformLlms, 'context key "platformLlms"');
      const local = models.list.find((m) => !m.api_key_arn);
      if (local) throw new Error(`context key "platformLlms" at ${local.model}: needs api_key_arn on AWS`);
    } catch (err) {
      throw new Error(`Invalid configuration: ${(err as Error).message.replace(/^Configuration error: /, '')}`);
    }
  }
  for (const [i, p] of parsed.data.cognitoIdentityProviders.entries()) {
    const at = `Invalid configuration: context key "cognitoIdentityProviders" (at ${i}`;
    if (p.type !== 'saml' && (p.clientSecretName === undefined) === (p.clientSecret === undefined))
      throw new Error(
        `${at}.clientSecretName): the name of the Secrets Manager secret holding ${p.name}'s client secret`,
      );
    if (p.type === 'saml' && p.metadataFile !== undefined && !existsSync(p.metadataFile))
      throw new Error(`${at}.metadataFile): no such file ${p.metadataFile}`);
  }
  if (parsed.data.oidcIssuer && !parsed.data.oidcAudience)
    throw new Error('Invalid configuration: context key "oidcAudience": required with oidcIssuer');
  return parsed.data;
}
