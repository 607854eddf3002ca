import type { SandboxServiceDeps } from '#shared/sandboxes/lifecycle.ts';
import type { ServiceContext } from '#shared/services.ts';
import { cursors } from '#shared/services/cursors.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** The adapters and services `sandboxDeps` reads: a factory built on it declares these with its own. */
export const sandboxDepsAdapters = [
  'sandboxStore',
  'sandboxRuntime',
  'specs',
  'sealer',
  'sandboxConfig',
  'bridgeUrl',
  'workspaceSnapshots',
  'snapshotRemoval',
  'commandPush',
  'plans',
  'usageStore',
  'prices',
] as const;
export const sandboxDepsUses = [cursors] as const;

/**
 * What every sandbox audience is built on; plain values and functions are read when first called.
 * Only the user's API starts sandboxes, so only it reads the user's settings (`launchOptions`): the
 * bridge's and housekeeping's bundles carry no settings service.
 * `more`: the members only one audience reads (the bridge's notices), built when first read too.
 */
export const sandboxDeps = (
  c: ServiceContext<(typeof sandboxDepsAdapters)[number], (typeof sandboxDepsUses)[number]>,
  launchOptions?: SandboxServiceDeps['launchOptions'],
  more: { [K in 'alerts' | 'pauseNotices']?: () => SandboxServiceDeps[K] } = {},
): SandboxServiceDeps =>
  lazy<SandboxServiceDeps>({
    store: () => c.adapters.sandboxStore,
    runtime: () => c.adapters.sandboxRuntime,
    specs: () => c.adapters.specs,
    sealer: () => c.adapters.sealer,
    cursors: () => c.use(cursors),
    config: () => c.adapters.sandboxConfig,
    bridgeUrl: () => c.adapters.bridgeUrl,
    snapshots: () => c.adapters.workspaceSnapshots,
    snapshotRemoval: () => c.adapters.snapshotRemoval,
    launchOptions: () => launchOptions,
    commandPush: () => c.adapters.commandPush,
    plans: () => c.adapters.plans,
    usage: () => c.adapters.usageStore,
    prices: () => c.adapters.prices,
    // Only where the function's entry names the pool (the starts, housekeeping): no other bundle carries it.
    pool: () => c.named('poolClaims'),
    now: () => () => new Date(),
    ...more,
  });
