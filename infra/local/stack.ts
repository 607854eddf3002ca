import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { logger } from '#shared/logging.ts';
import { detectContainment, type Containment } from '#shared/sandboxes/runtime/containment.ts';
import type { ProcessSandboxRuntime } from '#shared/sandboxes/runtime/process-sandbox-runtime.ts';
import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { Services } from '#shared/services.ts';
import { sweepAll } from '#shared/sandboxes/sweeper.ts';
import { billingExportFunction, sweeperFunction, usageReconcileFunction } from '#shared/functions.ts';
import { handler as awsSweeper } from '../../functions/sandboxes/sweeper.ts';
import { handler as awsBillingExport } from '../../functions/billing/export.ts';
import { exportKey, previousDay } from '#shared/billing/export.ts';
import { dailyBilling } from '#shared/billing/daily.ts';
import { handler as awsReconcile } from '../../functions/usage/reconcile.ts';
import { localServices } from '#shared/wiring/local.ts';
import { startLocalDatabase, useLocalTables, writeEndpointFile } from '#infra/local/dynamo.ts';
import { startGateway } from '#infra/local/gateway.ts';
import type { LocalConfig } from '#infra/local/config.ts';
import { buildSandboxProgram } from '#infra/local/sandbox-program.ts';
import { buildConsole } from '#infra/console-build.ts';
import type { DevIssuer } from '#infra/local/dev-issuer.ts';

export const DEV_USER = 'dev';
/** Hosts on which the development OpenID provider may run (never a public address). */
const LOOPBACK = new Set(['127.0.0.1', 'localhost']);

export interface LocalStack {
  url: string;
  devKey: string;
  /** `unix:<path>`: dynalite's socket (nothing of the stack but the gateway listens on loopback). */
  dynamoEndpoint: string;
  /** `unix:<path>`: the socket of the events table's dynalite. */
  eventsDynamoEndpoint: string;
  /** How sandbox processes are contained here ('none': a warning at start, the local user's sandboxes only). */
  containment: Containment;
  /**
   * The development OpenID provider (no OIDC_ISSUER configured, on a loopback address): its issuer
   * and the login password `npm start` prints. Undefined with an external issuer, or off loopback.
   */
  devIssuer?: Pick<DevIssuer, 'issuer' | 'password' | 'clientId' | 'audience'>;
  /** Sandboxes that had died with the previous server, reconciled at start (MISSING or ERROR). */
  reconciled: string[];
  services: Services;
  /** The child-process sandbox runtime (tests look at its processes). */
  sandboxRuntime: ProcessSandboxRuntime;
  /** Pauses every running sandbox and stops its process, then the gateway and the database. */
  close(): Promise<void>;
}

/** Reuses the development key in `.data/dev-api-key` while it still works; otherwise issues one. */
async function ensureDevKey(services: Services, dataDir: string): Promise<string> {
  const file = join(dataDir, 'dev-api-key');
  let key: string | undefined;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch {
    key = undefined;
  }
  if (key && (await services.apiKeys.authenticate(key))?.userId === DEV_USER) return key;
  const created = await services.apiKeys.create(DEV_USER, 'development key');
  writeFileSync(file, `${created.key}\n`, { mode: 0o600 });
  return created.key;
}

/**
 * Everything `npm start` runs, in this process: two dynalites (the events table's and the other tables', each
 * in a worker thread of its own, on disk under the data dir or in memory, on unix sockets), the tables, the sandbox program and the web console (each built when its sources changed), the
 * local adapters, the gateway, and a development key. Sandboxes that died with a previous server
 * are reconciled before the gateway takes requests.
 */
export async function startLocalStack(config: LocalConfig): Promise<LocalStack> {
  mkdirSync(config.dataDir, { recursive: true });
  const containment = config.containment ?? detectContainment();
  const programDir = await buildSandboxProgram();
  buildConsole();
  const dynamo = await startLocalDatabase(config.dataDir, config.memory);
  useLocalTables(dynamo.endpoint, 'acs', dynamo.eventsEndpoint);
  // Lets `npm run keys` reach these databases while this process holds them open.
  writeEndpointFile(config.dataDir, dynamo);
  let gatewayUrl: string | undefined;
  const services = localServices({
    dataDir: config.dataDir,
    bridgeUrl: () => {
      if (!gatewayUrl) throw new Error('The gateway is not listening yet');
      return gatewayUrl;
    },
    sandboxes: config.sandboxes,
    specsFile: config.specsFile,
    plansFile: config.plansFile,
    pricesFile: config.pricesFile,
    platformLlmsFile: config.platformLlmsFile,
    warmPoolSize: config.warmPoolSize,
    commandPush: config.commandPush,
    containment: { containment, programDir, uncontainedUsers: config.allowUncontained ? undefined : [DEV_USER] },
  });
  const devKey = await ensureDevKey(services, config.dataDir);
  // No process of this server runs yet: every live record is a sandbox that died with the last one.
  const reconciled = await services.sandboxHousekeeping.reconcileLost(
    'The sandbox process ended with the local server (it stopped without pausing it)',
  );
  // Sign-in works out of the box: without an external issuer, the development provider (loopback only).
  // Loaded only when it runs (oidc-provider and its koa take about a second to load).
  const dev =
    config.devIssuer !== false && !process.env.OIDC_ISSUER?.trim() && LOOPBACK.has(config.host)
      ? await import('#infra/local/dev-issuer.ts')
      : undefined;
  const devSecrets = dev ? await dev.devIssuerSecrets(config.dataDir) : undefined;
  let devIssuer: DevIssuer | undefined;
  const gateway = await startGateway({
    services,
    port: config.port,
    host: config.host,
    streamPingMs: config.streamPingMs,
    ...(dev ? { mount: { path: dev.DEV_ISSUER_PATH, handler: () => devIssuer?.handle } } : {}),
  });
  gatewayUrl = gateway.url;
  // Synchronously after listening (no request is served before this runs): the issuer needs the port.
  const savedEnv = {
    OIDC_ISSUER: process.env.OIDC_ISSUER,
    OIDC_AUDIENCE: process.env.OIDC_AUDIENCE,
    OIDC_CLIENT_ID: process.env.OIDC_CLIENT_ID,
  };
  if (dev && devSecrets) {
    const port = new URL(gateway.url).port;
    devIssuer = dev.createDevIssuer({
      issuer: `${gateway.url}${dev.DEV_ISSUER_PATH}`,
      origins: [...new Set([gateway.url, `http://127.0.0.1:${port}`, `http://localhost:${port}`])],
      secrets: devSecrets,
    });
    // The one configuration every reader takes the issuer from (authorizer, sign-in, console), as OIDC_ISSUER would be.
    process.env.OIDC_ISSUER = devIssuer.issuer;
    process.env.OIDC_AUDIENCE = devIssuer.audience;
    process.env.OIDC_CLIENT_ID = devIssuer.clientId;
  }
  // Every spec with a warm pool gets its standbys now, so the first start is warm too.
  await services.warmPool
    .open(gateway.url)
    .catch((err: unknown) => logger.error('Starting the warm pool failed', { error: err as Error }));
  const startTaskTimeout = startTaskTimeoutSeconds(process.env, 180);
  // Held to the sweeper function's declaration and adapters, as on AWS.
  const sweeperServices = services.forFunction(
    sweeperFunction.id,
    sweeperFunction,
    awsSweeper.wiring.adapters,
    awsSweeper.wiring.services,
  );
  // The sweeper, as the scheduled function does on AWS. unref: it never keeps the process alive.
  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    sweepAll(sweeperServices, new Date(), startTaskTimeout)
      .catch((err: unknown) => logger.error('Local sweep failed', { error: err as Error }))
      .finally(() => (sweeping = false));
  }, config.sweepIntervalMs ?? 30_000);
  sweeper.unref();
  const stripeConfigured = () => Boolean(process.env.STRIPE_API_KEY?.trim());
  // The daily FOCUS export (on AWS a schedule at 00:15 UTC): at start and every hour, yesterday's file unless it
  // is there already, under DATA_DIR/billing-exports/, then that day to Stripe when STRIPE_API_KEY is set. Held to
  // the export function's declaration, as on AWS.
  const exportServices = services.forFunction(
    billingExportFunction.id,
    billingExportFunction,
    awsBillingExport.wiring.adapters,
    awsBillingExport.wiring.services,
  );
  let exporting: Promise<unknown> = Promise.resolve();
  const dailyExport = () => {
    const day = previousDay(new Date());
    if (existsSync(join(config.dataDir, 'billing-exports', exportKey(day, day)))) return;
    exporting = dailyBilling(exportServices, stripeConfigured(), day).catch((err: unknown) =>
      logger.error('The daily billing export failed', { day, error: err as Error }),
    );
  };
  dailyExport();
  const exportTimer = setInterval(() => void exporting.then(dailyExport), 3_600_000);
  exportTimer.unref();
  // The daily usage reconcile, held to its function's declaration and adapters, as on AWS.
  const reconcileServices = services.forFunction(
    usageReconcileFunction.id,
    usageReconcileFunction,
    awsReconcile.wiring.adapters,
    awsReconcile.wiring.services,
  );
  const reconcile = setInterval(() => {
    reconcileServices.usageReconcile
      .run()
      .catch((err: unknown) => logger.error('Local usage reconcile failed', { error: err as Error }));
    // Deleted accounts' data, as the AWS function does after its reconcile (docs/sign-in.md).
    reconcileServices.accountPurge
      .sweep()
      .catch((err: unknown) => logger.error('Local account purge failed', { error: err as Error }));
  }, config.reconcileIntervalMs ?? 86_400_000);
  reconcile.unref();
  return {
    url: gateway.url,
    devKey,
    dynamoEndpoint: dynamo.endpoint,
    eventsDynamoEndpoint: dynamo.eventsEndpoint,
    containment,
    ...(devIssuer
      ? {
          devIssuer: {
            issuer: devIssuer.issuer,
            password: devIssuer.password,
            clientId: devIssuer.clientId,
            audience: devIssuer.audience,
          },
        }
      : {}),
    reconciled,
    services,
    sandboxRuntime: services.sandboxRuntime,
    close: async () => {
      clearInterval(sweeper);
      clearInterval(exportTimer);
      await exporting;
      clearInterval(reconcile);
      services.clearDeadlines();
      // Pause semantics: records say PAUSED, workspaces stay, no process outlives the server.
      await services.sandboxHousekeeping
        .suspendAll('Paused because the local server stopped')
        .catch((err: unknown) => logger.error('Pausing sandboxes at shutdown failed', { error: err as Error }));
      await services.warmPool
        .drainAll()
        .catch((err: unknown) => logger.error('Draining the warm pool failed', { error: err as Error }));
      await services.sandboxRuntime.stopAll();
      await gateway.close();
      await dynamo.close();
      if (devIssuer)
        for (const [k, v] of Object.entries(savedEnv)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
    },
  };
}
