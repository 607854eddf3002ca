import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { logger } from '#shared/logging.ts';
import dynalite from 'dynalite';
import { endpointConfig } from '#shared/store/dynamo.ts';
import { keyAttributeType, tableEnvVar, tableKeys, tables, type TableDef } from '#shared/store/tables.ts';

export interface EmbeddedDynamo {
  /** `unix:<socket path>`: what DYNAMODB_ENDPOINT and `.data/dynamodb-endpoint` hold. */
  endpoint: string;
  close(): Promise<void>;
}

/** Longest unix socket path that fits `sun_path` everywhere (104 bytes on macOS, with the NUL). */
const MAX_SOCKET_PATH = 100;

/**
 * dynalite in this process: on disk under `path`, or in memory without one. It listens on a unix
 * socket, never on loopback: dynalite has no authentication, and local sandboxes share loopback
 * with the server. The socket is `socketPath` (in the data dir, which no contained sandbox sees)
 * or, when that path is too long for a socket or none is given, one in a fresh private directory.
 */
export async function startDynalite(path?: string, socketPath?: string): Promise<EmbeddedDynamo> {
  const server = dynalite({ ...(path ? { path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const privateDir =
    socketPath && Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH ? undefined : mkdtempSync(join(tmpdir(), 'acs-db-'));
  const socket = privateDir ? join(privateDir, 'dynamodb.sock') : socketPath!;
  // A socket left by a server that was killed: nothing listens on it any more (the caller checked).
  rmSync(socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A unix socket whose listen backlog is full refuses a connect with EAGAIN instead of queueing it
    // (Node's default backlog, 511, was full when 1,000 stream sockets authorized at once:
    // bench/neighbours.ts); the kernel caps this at net.core.somaxconn.
    server.listen({ path: socket, backlog: 4096 }, () => resolve());
  });
  return {
    endpoint: `unix:${socket}`,
    // Closing the server closes its LevelDB, which flushes what was written (and removes the socket).
    close: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          if (privateDir) rmSync(privateDir, { recursive: true, force: true });
          else rmSync(socket, { force: true });
          resolve();
        }),
      ),
  };
}

/** Whether a dynalite answers at `endpoint` (a running `npm start`), within a second. */
export async function dynamoAnswers(endpoint: string): Promise<boolean> {
  const probe = new DynamoDBClient({ ...endpointConfig(endpoint), maxAttempts: 1 });
  try {
    await probe.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  } finally {
    probe.destroy();
  }
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
            Projection:
              'include' in idx && idx.include
                ? idx.include.length
                  ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...idx.include] }
                  : { ProjectionType: 'KEYS_ONLY' as const }
                : { ProjectionType: 'ALL' as const },
          })),
        }
      : {}),
  };
}

/** Creates the service's tables that do not exist yet (idempotent, so restarts keep data). */
export async function createTables(endpoint: string, prefix = 'acs'): Promise<void> {
  const client = new DynamoDBClient(endpointConfig(endpoint));
  const existing = new Set((await client.send(new ListTablesCommand({}))).TableNames ?? []);
  for (const key of tableKeys) {
    const name = `${prefix}-${key}`;
    if (!existing.has(name)) {
      await client.send(new CreateTableCommand(createInput(name, tables[key])));
      continue;
    }
    // dynalite cannot add an index to a table: a data dir made before an index existed lacks it until remade.
    const have = new Set(
      ((await client.send(new DescribeTableCommand({ TableName: name }))).Table?.GlobalSecondaryIndexes ?? []).map(
        (i) => i.IndexName,
      ),
    );
    const missing = Object.keys(tables[key].indexes).filter((i) => !have.has(i));
    if (missing.length)
      logger.warn('This data dir was made before these indexes existed; what reads them fails until it is remade', {
        table: name,
        missing,
        fix: 'stop the server, delete the data dir (DATA_DIR, default .data), start again',
      });
  }
  client.destroy();
}
