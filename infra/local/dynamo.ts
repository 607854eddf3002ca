import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  paginateScan,
  waitUntilTableNotExists,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { logger } from '#shared/logging.ts';
import { dynamoClient, endpointConfig } from '#shared/store/dynamo.ts';
import {
  keyAttributeType,
  tableEnvVar,
  tableKeys,
  tables,
  type TableDef,
  type TableKey,
} from '#shared/store/tables.ts';

export interface EmbeddedDynamo {
  /** `unix:<socket path>`: what DYNAMODB_ENDPOINT and `.data/dynamodb-endpoint` hold. */
  endpoint: string;
  close(): Promise<void>;
}

/** Longest unix socket path that fits `sun_path` everywhere (104 bytes on macOS, with the NUL). */
const MAX_SOCKET_PATH = 100;

/**
 * dynalite's side, run in a worker thread (its code as a string: a worker gets no TypeScript loader under
 * the test runner). It listens and answers `close` by closing, which flushes its LevelDB.
 */
const DYNALITE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const dynalite = require(workerData.module);
const server = dynalite({ ...(workerData.path ? { path: workerData.path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.once('error', (err) => parentPort.postMessage({ error: String(err && err.message || err) }));
server.listen({ path: workerData.socket, backlog: 4096 }, () => parentPort.postMessage({ listening: true }));
parentPort.on('message', (m) => m === 'close' && server.close(() => parentPort.postMessage({ closed: true })));
`;

/**
 * dynalite in a worker thread of this process: on disk under `path`, or in memory without one. A thread
 * of its own, because the database's work (parsing, validating, LevelDB) would otherwise share the
 * server's event loop: under a flood of event batches it stalled every other user's requests (docs/
 * performance.md, "Noisy neighbours"); its own thread runs on the other core.
 * It listens on a unix socket, never on loopback: dynalite has no authentication, and local sandboxes
 * share loopback with the server. The socket is `socketPath` (in the data dir, which no contained sandbox
 * sees) or, when that path is too long for a socket or none is given, one in a fresh private directory.
 */
export async function startDynalite(path?: string, socketPath?: string): Promise<EmbeddedDynamo> {
  const privateDir =
    socketPath && Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH ? undefined : mkdtempSync(join(tmpdir(), 'acs-db-'));
  const socket = privateDir ? join(privateDir, 'dynamodb.sock') : socketPath!;
  // A socket left by a server that was killed: nothing listens on it any more (the caller checked).
  rmSync(socket, { force: true });
  // A unix socket whose listen backlog is full refuses a connect with EAGAIN instead of queueing it
  // (Node's default backlog, 511, was full when 1,000 stream sockets authorized at once:
  // bench/neighbours.ts); the kernel caps this at net.core.somaxconn. (The backlog is set in the worker.)
  const worker = new Worker(DYNALITE_WORKER, {
    eval: true,
    workerData: { module: createRequire(import.meta.url).resolve('dynalite'), path, socket },
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  const started = await next();
  if (started.error) {
    await worker.terminate();
    throw new Error(`dynalite did not start: ${started.error}`);
  }
  // The server's exit is not held up by the thread; close() is how data on disk is flushed first.
  worker.unref();
  return {
    endpoint: `unix:${socket}`,
    close: async () => {
      const closed = next();
      worker.postMessage('close');
      await closed;
      await worker.terminate();
      if (privateDir) rmSync(privateDir, { recursive: true, force: true });
      else rmSync(socket, { force: true });
    },
  };
}

/** The two local databases `npm start` runs: the events table in one of its own, the other tables in the other. */
export interface LocalDatabase {
  endpoint: string;
  eventsEndpoint: string;
  close(): Promise<void>;
}

/**
 * The local stack's databases, each a dynalite in a worker thread of its own (`startDynalite`): the
 * events table in one, every other table in the other, so requests that read settings, keys or
 * sandboxes never wait behind a sandbox's event batches in the one thread of a dynalite (docs/
 * performance.md, "Noisy neighbours"). On disk under `dataDir` (`dynamodb/` and `dynamodb-events/`,
 * their sockets beside them), or in memory. The tables are created, and the events of a
 * data dir from before the split are moved into their database.
 */
export async function startLocalDatabase(dataDir: string, memory = false, prefix = 'acs'): Promise<LocalDatabase> {
  const start = (name: string) =>
    startDynalite(memory ? undefined : join(dataDir, name), join(dataDir, `${name}.sock`));
  const [main, events] = await Promise.all([start('dynamodb'), start('dynamodb-events')]);
  await createTables(main.endpoint, prefix, events.endpoint);
  await moveEvents(main.endpoint, events.endpoint, `${prefix}-${'events' satisfies TableKey}`);
  return {
    endpoint: main.endpoint,
    eventsEndpoint: events.endpoint,
    close: async () => {
      await Promise.all([main.close(), events.close()]);
    },
  };
}

/**
 * A data dir from before the events had a database of their own holds them in the other one: copied
 * across (puts of the same items: a copy cut short is finished by the next start), then that table
 * deleted. Both clients are unrouted: each talks to its own database only.
 */
async function moveEvents(endpoint: string, eventsEndpoint: string, table: string): Promise<void> {
  const from = dynamoClient(endpoint);
  const to = dynamoClient(eventsEndpoint);
  try {
    if (!(await from.send(new ListTablesCommand({}))).TableNames?.includes(table)) return;
    let moved = 0;
    for await (const page of paginateScan({ client: from, pageSize: 500 }, { TableName: table })) {
      for (let i = 0; i < (page.Items ?? []).length; i += 25) {
        let requests = page.Items!.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
        while (requests.length) {
          const out = await to.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
          requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
        }
      }
      moved += page.Items?.length ?? 0;
    }
    await from.send(new DeleteTableCommand({ TableName: table }));
    // dynalite deletes a table a moment later (DELETING first): gone before anything lists the tables again.
    await waitUntilTableNotExists({ client: from, maxWaitTime: 30, minDelay: 1, maxDelay: 1 }, { TableName: table });
    logger.info('Moved the events of a data dir from before they had a database of their own', { table, moved });
  } finally {
    from.destroy();
    to.destroy();
  }
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

/**
 * Points this process's stores at `endpoint`, with table names `<prefix>-<table>`; the events table at
 * `eventsEndpoint` when it has a database of its own (`startLocalDatabase`).
 */
export function useLocalTables(endpoint: string, prefix = 'acs', eventsEndpoint?: string): void {
  process.env.DYNAMODB_ENDPOINT = endpoint;
  if (eventsEndpoint) process.env.DYNAMODB_EVENTS_ENDPOINT = eventsEndpoint;
  else delete process.env.DYNAMODB_EVENTS_ENDPOINT;
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

/**
 * Creates the service's tables that do not exist yet (idempotent, so restarts keep data); the events
 * table in its own database when `eventsEndpoint` is given.
 */
export async function createTables(endpoint: string, prefix = 'acs', eventsEndpoint?: string): Promise<void> {
  const events = eventsEndpoint
    ? { endpoint: eventsEndpoint, table: `${prefix}-${'events' satisfies TableKey}` }
    : undefined;
  const client = dynamoClient(endpoint, events);
  try {
    for (const key of tableKeys) {
      const name = `${prefix}-${key}`;
      // A DescribeTable goes to the database the table belongs in (a ListTables would ask one of them).
      const have = await client.send(new DescribeTableCommand({ TableName: name })).then(
        (out) => new Set((out.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName)),
        (err: unknown) => {
          if ((err as { name?: string }).name === 'ResourceNotFoundException') return undefined;
          throw err;
        },
      );
      if (!have) {
        await client.send(new CreateTableCommand(createInput(name, tables[key])));
        continue;
      }
      // dynalite cannot add an index to a table: a data dir made before an index existed lacks it until remade.
      const missing = Object.keys(tables[key].indexes).filter((i) => !have.has(i));
      if (missing.length)
        logger.warn('This data dir was made before these indexes existed; what reads them fails until it is remade', {
          table: name,
          missing,
          fix: 'stop the server, delete the data dir (DATA_DIR, default .data), start again',
        });
    }
  } finally {
    client.destroy();
  }
}

/** What `.data/dynamodb-endpoint` holds while `npm start` runs: how another process reaches its databases. */
export const endpointFile = (dataDir: string) => join(dataDir, 'dynamodb-endpoint');

export function writeEndpointFile(dataDir: string, db: Pick<LocalDatabase, 'endpoint' | 'eventsEndpoint'>): void {
  writeFileSync(endpointFile(dataDir), `${db.endpoint}\n${db.eventsEndpoint}\n`);
}

/** The running server's databases, from its endpoint file (undefined when there is none). */
export function readEndpointFile(dataDir: string): Pick<LocalDatabase, 'endpoint' | 'eventsEndpoint'> | undefined {
  if (!existsSync(endpointFile(dataDir))) return undefined;
  const [endpoint, eventsEndpoint] = readFileSync(endpointFile(dataDir), 'utf8').split('\n');
  return endpoint && eventsEndpoint ? { endpoint, eventsEndpoint } : undefined;
}
