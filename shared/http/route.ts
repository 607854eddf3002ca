import type * as z from '#shared/zod.ts';
import type { TableKey } from '#shared/store/tables.ts';

export type TableAccess = 'read' | 'write' | 'append';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route: `none` (health, docs), `user` (an API key, checked by the authorizer
 * before the handler runs), `sandbox` (a sandbox's own key, checked by the handler itself) or
 * `standby` (a warm-pool standby's pool credential, checked by the handler: the pool routes only).
 */
export type AuthMode = 'none' | 'user' | 'sandbox' | 'standby';

/**
 * What a route's function may do beyond its tables; the CDK app turns each into IAM statements
 * (one map in infra/), so a function is granted exactly what its entry declares.
 */
export type Capability =
  | 'seal' // kms:Encrypt with the secrets key
  | 'unseal' // kms:Decrypt with the secrets key
  | 'signin' // reads the sign-in configuration (OIDC_ISSUER, OIDC_AUDIENCE, OIDC_CLIENT_ID, SIGNUP_MODE, OPERATORS, AUDIT_RETENTION_DAYS); no IAM
  | 'specs' // reads the deployment's sandbox specs (SANDBOX_SPECS); no IAM
  | 'origins' // reads the allowed browser origins (CORS_ORIGINS) to check a cookie write's Origin itself; no IAM
  | 'plans' // reads the deployment's plans (PLANS, from the CDK context `plans`); no IAM
  | 'prices' // reads the deployment's compute prices (PRICES, from the CDK context `prices`); no IAM
  | 'platform-llms' // reads the platform models, their prices and upstreams (PLATFORM_LLMS, from the CDK context `platformLlms`); no IAM
  | 'platform-llm-keys' // ssm:GetParameter / secretsmanager:GetSecretValue on the platform models' key ARNs (the LLM gateway only)
  | 'ecs:run' // ecs:RunTask on sandbox task definitions, iam:PassRole to the sandbox roles, ecs:TagResource
  | 'ecs:stop' // ecs:StopTask on tasks in the sandbox cluster
  | 'ecs:describe' // ecs:DescribeTasks, ecs:ListTasks in the sandbox cluster
  | 'ecs:task-definitions' // ecs:RegisterTaskDefinition, ecs:DescribeTaskDefinition (a revision per user image, registered once; IAM takes no resource ARN for either), iam:PassRole to the sandbox roles
  | 'commands:push' // execute-api:ManageConnections on the bridge socket's @connections (pushes queued commands to sandbox programs)
  | 's3:workspaces:read' // s3:GetObject under the workspace bucket's sandboxes/ prefix only (a paused sandbox's workspace reads)
  | 's3:workspaces' // s3:PutObject/GetObject/DeleteObject under the workspace bucket's sandboxes/ prefix, ListBucket of that prefix (signs the sandboxes' presigned requests)
  | 'stream:push' // execute-api:ManageConnections (PostToConnection, GetConnection) on the event stream's WebSocket API, its stage's @connections only
  | 'stream:close' // execute-api:ManageConnections DELETE (DeleteConnection) on the event stream's stage @connections, and the streamConnections byUser index: closes a suspended or removed person's streams
  | 'stream:resend' // lambda:InvokeFunction (asynchronous) on the stream's resend function, which sends a new connection what it asked for
  | 'pool:refill' // lambda:InvokeFunction (asynchronous) on the warm pool's refill function (after a claim), ecs:TagResource on the sandbox cluster's tasks (a claimed standby is tagged with its sandbox)
  | 'pool:deadline' // states:StartExecution on the warm pool's binding-deadline state machine (a claim's 10 s, then the sweeper)
  | 'events:grown-bytes' // dynamodb:Scan on the events table's sparse index grownBytes only (the sweeper's sum of stored event bytes)
  | 'snapshots:delete' // lambda:InvokeFunction (asynchronous) on the function that removes a deleted sandbox's snapshot objects (it holds s3:workspaces)
  | 'stripe' // reads the Stripe settings (STRIPE_API_BASE, STRIPE_METER_EVENTS_BASE) and ssm:GetParameter / secretsmanager:GetSecretValue on the Stripe key's ARN (STRIPE_API_KEY_ARN, the context `stripe`)
  | 'billing:export' // s3:PutObject under the billing-export bucket's focus-1.2/ prefix (the FOCUS CSV files: docs/billing.md)
  | 'usage:notify'; // events:PutEvents on the operator's usage bus (infra/constructs/usage-bus.ts): 80% / 100% notices

/** A route function's time-out when its entry names none: enough for its DynamoDB and KMS calls. */
export const ROUTE_TIMEOUT_SECONDS = 10;
/** API Gateway's 30 s integration limit (HTTP APIs), minus a margin for the function to answer first. */
export const MAX_ROUTE_TIMEOUT_SECONDS = 29;

/** The error statuses an operation may answer beyond those the wrapper derives (see shared/http/openapi.ts). */
export type ErrorStatus = 400 | 402 | 404 | 409 | 413 | 429 | 502 | 504;

interface RouteFields {
  /** Stable id, also the OpenAPI operationId and the Lambda's logical name. */
  id: string;
  method: Method;
  /** API Gateway path syntax: `/api/v1/sandboxes/{sandbox_id}/pause`. */
  path: string;
  /** The Lambda entry file, relative to the repository root. */
  entry: string;
  auth: AuthMode;
  summary: string;
  tag: string;
  /**
   * Tables the function touches: `read` or `write` (write includes read), or `append`: only new
   * items (PutItem with `attribute_not_exists`; no read, update or delete), for the audit log.
   */
  tables: Partial<Record<TableKey, TableAccess>>;
  capabilities?: readonly Capability[];
  /** Success status when it is not 200. */
  status?: number;
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Sandbox routes: which of the sandbox's credentials the call carries (default its session key). */
  sandboxKey?: 'session' | 'enrollment';
  /**
   * The function's time-out in seconds when the default (ROUTE_TIMEOUT_SECONDS) is too short: calls to ECS,
   * the bridge long-poll. At most MAX_ROUTE_TIMEOUT_SECONDS: API Gateway gives up on an HTTP API integration
   * after 30 s, so a function that ran longer would answer nobody (the stack refuses a larger value).
   */
  timeoutSeconds?: number;
  /**
   * The route also accepts a conversation-scoped key, for the conversation named by this validated
   * path or query field (the OpenHands UI calls these with the conversation's `session_api_key`);
   * `'own'`: on a route that names no conversation, whose operation answers such a key about its own
   * conversation only (the agent server's settings, conversation search, count and batch get, which
   * Agent Canvas's local mode reads with the conversation's key);
   * `'key'`: a path that names no conversation (the agent server's `/api/git/...` on the conversation
   * host): the conversation is the one the key was issued for, and user credentials name it in the
   * `conversation_id` query.
   */
  conversationKey?: 'conversation_id' | 'conversation_id__eq' | 'own' | 'key';
  /** The route manages credentials (API keys): a session cookie counts only with an allowed Origin. */
  managesCredentials?: boolean;
  /**
   * A `user` route that exchanges a credential for another (`/api/authenticate`: an API key for a session
   * cookie): the authorizer counts every call per client address before it reads any credential, refused or
   * not (SIGN_IN_PER_IP_PER_MINUTE, as the sign-in exchange; past it 429 with `Retry-After`).
   */
  limitedPerAddress?: boolean;
}

/**
 * `idempotent: true`: a create that honours an `Idempotency-Key` header (the wrapper answers a repeat
 * with the first answer: shared/http/idempotency.ts). Its function needs the idempotency table, so
 * such an entry must declare `tables: { idempotency: 'write', ... }` (the compiler says so), from
 * which its IAM and environment derive as for any table.
 */
export type RouteDef = RouteFields &
  (
    | { idempotent?: false }
    | { idempotent: true; tables: { idempotency: 'write' } & Partial<Record<TableKey, TableAccess>> }
  );

/** A route's schemas: what its request is validated with, and its success response (for the OpenAPI document). */
export interface RouteSchemas {
  body?: z.core.$ZodType;
  query?: z.core.$ZodType;
  params?: z.core.$ZodType;
  response?: z.core.$ZodType;
  /** Error statuses the operation answers itself, beyond those the wrapper derives (404 of a path id, 400 of a body...). */
  errors?: readonly ErrorStatus[];
  /** A typical request body, shown in the OpenAPI document (a unit test parses it with `body`). */
  example?: unknown;
}
