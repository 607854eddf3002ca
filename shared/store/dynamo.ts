import { Agent } from 'node:http';
import { createConnection, type Socket } from 'node:net';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tableEnvVar, type TableKey } from '#shared/store/tables.ts';

/**
 * Locally the events table has a dynalite of its own (`DYNAMODB_EVENTS_ENDPOINT`): a sandbox's event
 * batches keep that database's one thread busy, and every other request would wait behind them (docs/
 * performance.md, "Noisy neighbours"). A request for it carries this host name, which picks its socket.
 */
const EVENTS_HOST = 'events.localhost';

/** HTTP over unix sockets: a request goes to the socket its host name maps to, else to `path`. */
class UnixSocketAgent extends Agent {
  constructor(
    private readonly path: string,
    private readonly hosts: Record<string, string> = {},
  ) {
    super({ keepAlive: true });
  }

  // The agent pools connections per host name, so the two databases' connections never mix.
  override createConnection(options: { host?: string | null }): Socket {
    return createConnection((options.host && this.hosts[options.host]) || this.path);
  }
}

/** The tables a request names (a batch or transaction may name several). */
function tablesOf(input: Record<string, unknown>): string[] {
  if (typeof input.TableName === 'string') return [input.TableName];
  if (input.RequestItems) return Object.keys(input.RequestItems);
  if (Array.isArray(input.TransactItems))
    return input.TransactItems.map((item) => (Object.values(item)[0] as { TableName: string }).TableName);
  return [];
}

/**
 * Sends requests for the events table (named `events`) to `EVENTS_HOST`, at the build
 * step (after the endpoint is resolved, before the request is sent): one client and one middleware stack
 * for both databases, so what counts or watches requests sees all of them. A request naming the events
 * table and another together cannot be served by either database: refused.
 */
function routeEventsTable(client: DynamoDBClient, events: string): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const named = tablesOf(args.input as Record<string, unknown>);
      const routed = named.filter((t) => t === events).length;
      if (routed && routed < named.length)
        throw new Error('A request names the events table and another: locally they are in two databases');
      if (routed) (args.request as { hostname: string }).hostname = EVENTS_HOST;
      return next(args);
    },
    { step: 'build', name: 'localEventsDatabase' },
  );
}

/**
 * The client configuration for a local endpoint: `http://host:port`, or `unix:<path>` for dynalite
 * on a unix socket (the local stack: nothing unauthenticated listens on loopback, where sandboxes
 * could reach it), with the events table's requests on the socket of `eventsEndpoint` when one is given.
 */
export function endpointConfig(endpoint: string, eventsEndpoint?: string): DynamoDBClientConfig {
  const local = {
    region: process.env.AWS_REGION ?? 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  if (!endpoint.startsWith('unix:')) return { ...local, endpoint };
  return {
    ...local,
    endpoint: 'http://localhost',
    requestHandler: { httpAgent: new UnixSocketAgent(endpoint.slice('unix:'.length), eventsHosts(eventsEndpoint)) },
    httpAuthSchemes: [
      {
        schemeId: 'aws.auth#sigv4',
        identityProvider: (config) => config.getIdentityProvider('aws.auth#sigv4'),
        signer: {
          sign: async (request) => Object.assign(request, { headers: { ...request.headers, ...UNCHECKED_SIGNATURE } }),
        },
      },
    ],
  };
}

/** The events database's socket, by the host name its requests carry. */
function eventsHosts(eventsEndpoint: string | undefined): Record<string, string> {
  if (!eventsEndpoint) return {};
  if (!eventsEndpoint.startsWith('unix:')) throw new Error('DYNAMODB_EVENTS_ENDPOINT must be unix:<path>');
  return { [EVENTS_HOST]: eventsEndpoint.slice('unix:'.length) };
}

/**
 * The embedded dynalite checks that a request carries a signature's parts and never the signature: a
 * constant one. Signing (hashing the body, an HMAC chain) is about a fifth of the CPU of writing a batch
 * of 100 events, on the loop every local user's requests share (docs/performance.md, "Noisy neighbours").
 */
export const UNCHECKED_SIGNATURE = {
  authorization:
    'AWS4-HMAC-SHA256 Credential=local/20000101/local/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=unchecked',
  'x-amz-date': '20000101T000000Z',
};

/**
 * The SDK's default logger drops everything, but its log middleware still builds what it would log
 * for `info` (after every call) and `error`: a copy of the whole input and output with sensitive members
 * masked: about a fifth of the CPU of writing a batch of 100 events (measured with a stub HTTP handler).
 * Without those two methods it builds nothing; the SDK calls
 * the others unconditionally, so they stay (as no-ops, as before).
 */
const sdkLogger = { trace() {}, debug() {}, warn() {} } as unknown as DynamoDBClientConfig['logger'];

/** The events table's database when it has one of its own (locally): its endpoint, and the table's name. */
export interface EventsDatabase {
  endpoint: string;
  table: string;
}

/**
 * A DynamoDB client: for a local endpoint (see `endpointConfig`), with the events table's requests sent
 * to its own database when one is given; for the regional endpoint without either.
 */
export function dynamoClient(endpoint?: string, events?: EventsDatabase): DynamoDBClient {
  if (events && !endpoint?.startsWith('unix:'))
    throw new Error('An events database of its own needs DYNAMODB_ENDPOINT on a unix socket');
  const client = new DynamoDBClient({
    ...(endpoint ? endpointConfig(endpoint, events?.endpoint) : {}),
    logger: sdkLogger,
  });
  if (events) routeEventsTable(client, events.table);
  return client;
}

let client: DynamoDBDocumentClient | undefined;
let clientEndpoints: string | undefined;

/**
 * One document client per container. `DYNAMODB_ENDPOINT` points it at dynalite locally, and
 * `DYNAMODB_EVENTS_ENDPOINT` the events table at a dynalite of its own (see `endpointConfig`); on AWS
 * both are unset and the SDK finds the regional endpoint.
 */
export function documentClient(): DynamoDBDocumentClient {
  const { DYNAMODB_ENDPOINT: endpoint, DYNAMODB_EVENTS_ENDPOINT: eventsEndpoint } = process.env;
  // New endpoints (a local stack started again in the same process) get a new client.
  if (!client || clientEndpoints !== `${endpoint} ${eventsEndpoint}`) {
    clientEndpoints = `${endpoint} ${eventsEndpoint}`;
    const events = eventsEndpoint ? { endpoint: eventsEndpoint, table: tableName('events') } : undefined;
    client = DynamoDBDocumentClient.from(dynamoClient(endpoint, events), {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    });
  }
  return client;
}

/** The physical name of a table, from the environment the deployment (or the local gateway) set. */
export function tableName(key: TableKey): string {
  const name = process.env[tableEnvVar(key)];
  if (!name) throw new Error(`Configuration error: ${tableEnvVar(key)} is not set`);
  return name;
}

export const isConditionFailure = (err: unknown): boolean =>
  (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/**
 * Runs a conditional write: true when it was applied, false when its condition failed (another
 * writer got there first, or the item is not in the expected state). Any other error is thrown.
 */
export async function conditionalWrite(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * `conditionalWrite` for a write that returns the item (`ReturnValues`): its attributes when it was
 * applied, undefined when its condition failed. Any other error is thrown.
 */
export async function conditionalReturn(
  write: () => Promise<{ Attributes?: Record<string, unknown> }>,
): Promise<Record<string, unknown> | undefined> {
  try {
    return (await write()).Attributes;
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}
