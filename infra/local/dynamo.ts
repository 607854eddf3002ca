import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { keyAttributeType, tableEnvVar, tableKeys, tables, type TableDef } from '#shared/store/tables.ts';

export interface EmbeddedDynamo {
  endpoint: string;
  close(): Promise<void>;
}

/** dynalite in this process: on disk under `path`, or in memory without one. */
export async function startDynalite(path?: string): Promise<EmbeddedDynamo> {
  const server = dynalite({ ...(path ? { path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    // Closing the server closes its LevelDB, which flushes what was written.
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Points this process's stores at `endpoint`, with table names `<prefix>-<table>`. */
export function useLocalTables(endpoint: string, prefix = 'acs'): void {
  process.env.DYNAMODB_ENDPOINT = endpoint;
  process.env.AWS_REGION ??= 'local';
  for (const key of tableKeys) process.env[tableEnvVar(key)] = `${prefix}-${key}`;
}

function createInput(name: string, def: TableDef): CreateTableCommandInput {
  const attrs = new Set<string>([def.pk, ...(def.sk ? [def.sk] : [])]);
  for (const idx of Object.values(def.indexes)) {
    attrs.add(idx.pk);
    if (idx.sk) attrs.add(idx.sk);
  }
  const keySchema = (pk: string, sk?: string) => [
    { AttributeName: pk, KeyType: 'HASH' as const },
    ...(sk ? [{ AttributeName: sk, KeyType: 'RANGE' as const }] : []),
  ];
  const indexes = Object.entries(def.indexes);
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attrs].map((a) => ({ AttributeName: a, AttributeType: keyAttributeType(a) })),
    KeySchema: keySchema(def.pk, def.sk),
    ...(indexes.length
      ? {
          GlobalSecondaryIndexes: indexes.map(([IndexName, idx]) => ({
            IndexName,
            KeySchema: keySchema(idx.pk, idx.sk),
            Projection: { ProjectionType: 'ALL' },
          })),
        }
      : {}),
  };
}

/** Creates the service's tables that do not exist yet (idempotent, so restarts keep data). */
export async function createTables(endpoint: string, prefix = 'acs'): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const existing = new Set((await client.send(new ListTablesCommand({}))).TableNames ?? []);
  for (const key of tableKeys) {
    const name = `${prefix}-${key}`;
    if (!existing.has(name)) await client.send(new CreateTableCommand(createInput(name, tables[key])));
  }
  client.destroy();
}
