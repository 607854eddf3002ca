import { Accounts } from '#shared/accounts/accounts.ts';
import { Audit } from '#shared/accounts/audit.ts';
import { DynamoAccountStore, DynamoAuditStore } from '#shared/accounts/dynamo-account-store.ts';
import { roles, type Role } from '#shared/accounts/model.ts';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiKeys } from '#shared/auth/api-keys.ts';
import { KEY_CACHE_SECONDS } from '#shared/auth/key-cache.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { userIdSchema } from '#shared/auth/model.ts';
import {
  dynamoAnswers,
  readEndpointFile,
  startLocalDatabase,
  useLocalTables,
  type LocalDatabase,
} from '#infra/local/dynamo.ts';

const USAGE = `Usage:
  npm run keys -- create --user <user-id> [--name <label>] [--org <org-id> [--role member|admin|owner]]
  npm run keys -- list --user <user-id>
  npm run keys -- revoke <key-id>

Local by default: it uses the running \`npm start\` (through .data/dynamodb-endpoint) or opens .data/ itself.
Against a deployment: --aws, with AWS credentials and TABLE_KEYS set to the stack's KeysTableName output
(with --org also TABLE_USERS, TABLE_ORGS and TABLE_AUDIT_LOG: UsersTableName, OrgsTableName, AuditLogTableName).`;

async function connect(aws: boolean): Promise<LocalDatabase | undefined> {
  if (aws) {
    if (!process.env.TABLE_KEYS)
      throw new Error('TABLE_KEYS must name the deployed keys table (stack output KeysTableName)');
    return undefined;
  }
  const dataDir = resolve(process.env.DATA_DIR ?? '.data');
  const running = readEndpointFile(dataDir);
  if (running && (await dynamoAnswers(running.endpoint))) {
    useLocalTables(running.endpoint, 'acs', running.eventsEndpoint);
    return undefined;
  }
  // None, or a stale file from a stopped server: open the databases directly.
  const dynamo = await startLocalDatabase(dataDir);
  useLocalTables(dynamo.endpoint, 'acs', dynamo.eventsEndpoint);
  return dynamo;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      user: { type: 'string' },
      name: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
      aws: { type: 'boolean', default: false },
      help: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const [command, arg] = positionals;
  if (values.help || !command || !['create', 'list', 'revoke'].includes(command)) {
    process.stderr.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  if (command !== 'revoke') {
    const user = userIdSchema.safeParse(values.user);
    if (!user.success) {
      process.stderr.write(`--user: ${values.user === undefined ? 'is required' : user.error.issues[0]!.message}\n`);
      return 2;
    }
  } else if (!arg) {
    process.stderr.write('revoke needs a key id (see `list`)\n');
    return 2;
  }
  const dynamo = await connect(values.aws);
  try {
    const keys = new ApiKeys(new DynamoKeyStore());
    if (command === 'create') {
      // --org: a new user joins that organization (otherwise a personal one is made on first use).
      if (values.org) {
        const role = (values.role ?? 'member') as Role;
        if (!roles.includes(role)) throw new Error(`--role must be one of ${roles.join(', ')}`);
        const accounts = new Accounts(new DynamoAccountStore(), new Audit(new DynamoAuditStore()));
        await accounts.join(values.user!, values.org, role, 'keys-cli');
      }
      const { key, record } = await keys.create(values.user!, values.name ?? 'unnamed');
      process.stderr.write(`Created key ${record.keyId} for user "${record.userId}". It is shown only this once:\n`);
      process.stdout.write(`${key}\n`);
    } else if (command === 'list') {
      process.stdout.write(`${JSON.stringify(await keys.list(values.user!), null, 2)}\n`);
    } else if (!(await keys.revoke(arg!))) {
      process.stderr.write(`No active key ${arg}\n`);
      return 1;
    } else {
      process.stderr.write(
        `Revoked key ${arg}: servers that checked it in the last ${KEY_CACHE_SECONDS} s refuse it within ${KEY_CACHE_SECONDS} s\n`,
      );
    }
    return 0;
  } finally {
    await dynamo?.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
