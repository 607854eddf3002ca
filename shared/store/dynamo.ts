import { Agent } from 'node:http';
import { createConnection, type Socket } from 'node:net';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tableEnvVar, type TableKey } from '#shared/store/tables.ts';

/** HTTP over a unix socket: every connection goes to `path`, whatever the URL's host says. */
class UnixSocketAgent extends Agent {
  constructor(private readonly path: string) {
    super({ keepAlive: true });
  }

  override createConnection(): Socket {
    return createConnection(this.path);
  }
}

/**
 * The client configuration for a local endpoint: `http://host:port`, or `unix:<path>` for dynalite
 * on a unix socket (the local stack: nothing unauthenticated listens on loopback, where sandboxes
 * could reach it).
 */
export function endpointConfig(endpoint: string): DynamoDBClientConfig {
  const local = {
    region: process.env.AWS_REGION ?? 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  if (!endpoint.startsWith('unix:')) return { ...local, endpoint };
  return {
    ...local,
    endpoint: 'http://localhost',
    requestHandler: { httpAgent: new UnixSocketAgent(endpoint.slice('unix:'.length)) },
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

let client: DynamoDBDocumentClient | undefined;
let clientEndpoint: string | undefined;

/**
 * One document client per container. `DYNAMODB_ENDPOINT` points it at dynalite locally (see
 * `endpointConfig`); on AWS it is unset and the SDK finds the regional endpoint.
 */
export function documentClient(): DynamoDBDocumentClient {
  // A new endpoint (a local stack started again in the same process) gets a new client.
  if (!client || clientEndpoint !== process.env.DYNAMODB_ENDPOINT) {
    const endpoint = process.env.DYNAMODB_ENDPOINT;
    clientEndpoint = endpoint;
    const base = new DynamoDBClient({ ...(endpoint ? endpointConfig(endpoint) : {}), logger: sdkLogger });
    client = DynamoDBDocumentClient.from(base, {
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
