import type * as z from '#shared/zod.ts';
import type { TableKey } from '#shared/store/tables.ts';

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
  | 'specs' // reads the deployment's sandbox specs (SANDBOX_SPECS); no IAM
  | 'ecs:run' // ecs:RunTask on sandbox task definitions, iam:PassRole to the sandbox roles, ecs:TagResource
  | 'ecs:stop' // ecs:StopTask on tasks in the sandbox cluster
  | 'ecs:describe' // ecs:DescribeTasks, ecs:ListTasks in the sandbox cluster
  | 'ecs:task-definitions' // ecs:Register/Deregister/DescribeTaskDefinition (a revision per sandbox), ecs:TagResource on the new revision (tag-on-create), iam:PassRole to the sandbox roles
  | 'commands:push' // execute-api:ManageConnections on the bridge socket's @connections (pushes queued commands to sandbox programs)
  | 's3:workspaces' // s3:PutObject/GetObject/DeleteObject under the workspace bucket's sandboxes/ prefix, ListBucket of that prefix (signs the sandboxes' presigned requests)
  | 'stream:push' // execute-api:ManageConnections (PostToConnection, GetConnection) on the event stream's WebSocket API, its stage's @connections only
  | 'stream:resend' // lambda:InvokeFunction (asynchronous) on the stream's resend function, which sends a new connection what it asked for
  | 'pool:refill' // lambda:InvokeFunction (asynchronous) on the warm pool's refill function (after a claim), ecs:TagResource on the sandbox cluster's tasks (a claimed standby is tagged with its sandbox)
  | 'snapshots:delete'; // lambda:InvokeFunction (asynchronous) on the function that removes a deleted sandbox's snapshot objects (it holds s3:workspaces)

export interface RouteDef {
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
  /** Tables the function touches: `read` or `write` (write includes read). */
  tables: Partial<Record<TableKey, 'read' | 'write'>>;
  capabilities?: readonly Capability[];
  /** Schemas belong with the route's operation (RouteSchemas); an entry may still declare them inline. */
  body?: z.core.$ZodType;
  query?: z.core.$ZodType;
  params?: z.core.$ZodType;
  response?: z.core.$ZodType;
  /** Success status when it is not 200. */
  status?: number;
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Sandbox routes: which of the sandbox's credentials the call carries (default its session key). */
  sandboxKey?: 'session' | 'enrollment';
  /** The function's time-out when the default is too short (calls to ECS, the bridge long-poll). */
  timeoutSeconds?: number;
  /**
   * The route also accepts a conversation-scoped key, for the conversation named by this validated
   * path or query field (the OpenHands UI calls these with the conversation's `session_api_key`).
   */
  conversationKey?: 'conversation_id' | 'conversation_id__eq';
  /** The route manages credentials (API keys): a session cookie counts only with an allowed Origin. */
  managesCredentials?: boolean;
}

/** A route's schemas: what its request is validated with, and its success response (for the OpenAPI document). */
export interface RouteSchemas {
  body?: z.core.$ZodType;
  query?: z.core.$ZodType;
  params?: z.core.$ZodType;
  response?: z.core.$ZodType;
}
