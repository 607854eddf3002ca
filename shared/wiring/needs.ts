import type { Capability, RouteDef, TableAccess } from '#shared/http/route.ts';
import { tableEnvVar, type TableKey } from '#shared/store/tables.ts';

/**
 * What a function may touch: its tables (`read`, or `write` which includes read) and capabilities.
 * A route-table entry is one; the event functions' declarations are in shared/functions.ts. From it
 * come the function's IAM statements (infra/iam.ts), its environment variables
 * (`environmentNames`, filled in by infra/stack.ts) and the adapters its handler may build
 * (shared/wiring/adapters.ts checks each against it).
 */
export type Declaration = Pick<RouteDef, 'tables' | 'capabilities'>;

/** What building or calling an adapter asks of the declaration of the function that does it. */
export interface Needs {
  tables?: Partial<Record<TableKey, TableAccess>>;
  capabilities?: readonly Capability[];
  /** At least one of these: e.g. a sealer is built by a function that only seals or only opens. */
  anyOf?: readonly Capability[];
}

/** What `needs` asks that `declared` does not give, in words; empty when covered. */
export function uncovered(declared: Declaration, needs: Needs): string[] {
  const out: string[] = [];
  for (const [table, level] of Object.entries(needs.tables ?? {}) as [TableKey, TableAccess][]) {
    const has = declared.tables[table];
    // write covers read and append; append covers only append; read covers only read.
    const covered = has === 'write' || has === level;
    if (!covered) out.push(`tables.${table}: '${level}'`);
  }
  const caps = new Set(declared.capabilities ?? []);
  for (const cap of needs.capabilities ?? []) if (!caps.has(cap)) out.push(`capability '${cap}'`);
  if (needs.anyOf?.length && !needs.anyOf.some((c) => caps.has(c)))
    out.push(`one of the capabilities ${needs.anyOf.map((c) => `'${c}'`).join(', ')}`);
  return out;
}

/** The settings of the sandbox runtime: given to every function that may start, stop or list sandbox tasks. */
export const sandboxRuntimeEnv = [
  'ECS_CLUSTER_ARN',
  'SANDBOX_SUBNET_IDS',
  'SANDBOX_SECURITY_GROUP_ID',
  'SANDBOX_TASK_ROLE_ARN',
  'SANDBOX_EXECUTION_ROLE_ARN',
  'SANDBOX_START_TIMEOUT_SECONDS',
  'SANDBOX_IDLE_MINUTES',
  'MAX_RUNNING_SANDBOXES',
] as const;

/** Each capability's environment variables (the IAM side is infra/iam.ts). */
const capabilityEnv: Record<Capability, readonly string[]> = {
  seal: ['SECRETS_KEY_ID'],
  unseal: ['SECRETS_KEY_ID'],
  specs: ['SANDBOX_SPECS'],
  origins: ['CORS_ORIGINS'],
  plans: ['PLANS'],
  prices: ['PRICES'],
  'platform-llms': ['PLATFORM_LLMS'],
  'platform-llm-keys': ['PLATFORM_LLMS', 'LLM_CONCURRENT_CALLS_PER_ORG'],
  signin: ['OIDC_ISSUER', 'OIDC_AUDIENCE', 'OIDC_CLIENT_ID', 'SIGNUP_MODE', 'OPERATORS', 'AUDIT_RETENTION_DAYS'],
  'ecs:run': sandboxRuntimeEnv,
  'ecs:stop': sandboxRuntimeEnv,
  'ecs:describe': sandboxRuntimeEnv,
  'ecs:task-definitions': sandboxRuntimeEnv,
  's3:workspaces': ['WORKSPACE_BUCKET'],
  's3:workspaces:read': ['WORKSPACE_BUCKET'],
  'commands:push': ['BRIDGE_SOCKET_ENDPOINT'],
  'stream:push': ['STREAM_CALLBACK_URL'],
  'stream:close': ['STREAM_CALLBACK_URL'],
  'stream:resend': ['STREAM_RESEND_FUNCTION'],
  'snapshots:delete': ['SNAPSHOTS_DELETE_FUNCTION'],
  // The table's name comes with its table access (TABLE_EVENTS).
  'events:grown-bytes': [],
  'pool:refill': ['POOL_REFILL_FUNCTION'],
  'pool:deadline': ['POOL_DEADLINE_STATE_MACHINE'],
  'billing:export': ['BILLING_EXPORT_BUCKET'],
  stripe: ['STRIPE_API_KEY_ARN', 'STRIPE_API_BASE', 'STRIPE_METER_EVENTS_BASE'],
  'usage:notify': ['USAGE_EVENT_BUS'],
};

/** The environment variables a declaration gives its function, derived from it alone. */
export function environmentNames(declared: Declaration): string[] {
  const names = new Set<string>();
  for (const table of Object.keys(declared.tables) as TableKey[]) names.add(tableEnvVar(table));
  // Writers of the ledger's records set their expiry (shared/usage/retention.ts).
  if (declared.tables.usage === 'write') names.add('USAGE_RETENTION_DAYS');
  for (const cap of declared.capabilities ?? []) for (const name of capabilityEnv[cap]) names.add(name);
  return [...names].sort();
}
