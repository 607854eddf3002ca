import { describe, expect, it } from 'vitest';
import { eventFunctions } from '#shared/functions.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { llmGatewayRoute, routes } from '#shared/routes.ts';
import { pathToFileURL } from 'node:url';
import { builderModuleFor, loadFunctionAdapters } from '#infra/function-adapters.ts';
import { defineService, servicesOf } from '#shared/services.ts';
import { cursors } from '#shared/services/cursors.ts';
import { settings } from '#shared/services/settings.ts';
import { adapterNeeds, wire, WiringError, type AdapterName } from '#shared/wiring/adapters.ts';
import { functionAdapters } from '#shared/wiring/function-adapters.ts';
import type { FunctionWiring } from '#shared/wiring/aws.ts';
import * as awsBuilders from '#shared/wiring/aws/builders.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';
import { environmentNames, uncovered, type Declaration, type Needs } from '#shared/wiring/needs.ts';
import { sandboxSpecsEnv } from '#test/helpers/fake-aws.ts';

/**
 * The guard of principle 9 that needs no AWS: every function's adapters are derived from the services
 * its entry names and its declaration (shared/wiring/function-adapters.ts); each must be covered by
 * the declaration, must build with nothing but the environment the CDK app derives from it, and its
 * bundle must carry exactly their builders. At run time `wire` refuses any other
 * build or call in the local stack and in tests, so an integration test that walks a path needing
 * more fails; Lambda bundles carry no such guard (infra/bundle.ts), the tier's IAM checks stand there.
 */
const functions: { id: string; entry: string; declaration: Declaration }[] = [
  ...(routes as readonly RouteDef[]).map((r) => ({ id: r.id, entry: r.entry, declaration: r })),
  ...eventFunctions.map((f) => ({ id: f.id, entry: f.entry, declaration: f })),
  { id: llmGatewayRoute.id, entry: llmGatewayRoute.entry, declaration: llmGatewayRoute },
];

/** Plausible values: an adapter that parses its configuration must accept what the stack gives. */
const sampleValues: Record<string, string> = {
  SANDBOX_SPECS: sandboxSpecsEnv(),
  SANDBOX_START_TIMEOUT_SECONDS: '600',
  SANDBOX_IDLE_MINUTES: '30',
  MAX_RUNNING_SANDBOXES: '5',
  SANDBOX_SUBNET_IDS: 'subnet-1,subnet-2',
  CORS_ORIGINS: 'https://ui.example.com',
  PLANS: '',
  PRICES: '',
  PLATFORM_LLMS: '',
  USAGE_RETENTION_DAYS: '400',
};

async function wiringOf(entry: string): Promise<FunctionWiring | undefined> {
  const mod = (await import(`../../${entry}`)) as { handler: { wiring?: FunctionWiring } };
  return mod.handler.wiring;
}

/** Builds with `process.env` replaced by exactly `env` for the duration. */
function withEnv<T>(env: Record<string, string>, run: () => T): T {
  const saved = process.env;
  process.env = { ...env };
  try {
    return run();
  } finally {
    process.env = saved;
  }
}

const allNeeds = (name: AdapterName): Needs[] => [
  adapterNeeds[name].build,
  ...(Object.values(adapterNeeds[name].calls ?? {}) as Needs[]),
];

describe.each(functions)('$id ($entry)', ({ id, entry, declaration }) => {
  it('builds only adapters its declaration covers, with only the environment derived from it', async () => {
    const wiring = await wiringOf(entry);
    if (!wiring) {
      // Only a function that touches nothing may do without wiring (the $default route).
      expect(declaration).toEqual(expect.objectContaining({ tables: {} }));
      expect(declaration.capabilities ?? []).toEqual([]);
      return;
    }
    expect(wiring.id).toBe(id);
    expect(wiring.declaration).toBe(declaration);
    // What the entry names itself is granted (derived adapters are granted by construction, these are not dropped silently).
    for (const name of wiring.named)
      expect(wiring.adapters, `${id} names ${name}, which its declaration does not grant`).toContain(name);
    for (const name of wiring.adapters)
      expect(uncovered(declaration, adapterNeeds[name].build), `${id} builds ${name}`).toEqual([]);
    const env = {
      AWS_REGION: 'eu-west-1',
      ...Object.fromEntries(environmentNames(declaration).map((n) => [n, sampleValues[n] ?? `value-of-${n}`])),
    };
    withEnv(env, () => {
      const adapters = wire(id, declaration, wiring.builders);
      for (const name of wiring.adapters) expect(() => adapters[name], `${id} builds ${name}`).not.toThrow();
    });
  });

  it('names the services its operation reads, and no others', async () => {
    const wiring = await wiringOf(entry);
    if (!wiring?.operation) return;
    // The services a run reads (operations take them by destructuring, before any other work).
    const read = new Set<string>();
    const recorder = new Proxy(
      {},
      {
        get: (_, prop) => {
          if (typeof prop === 'string') read.add(prop);
          return undefined;
        },
      },
    );
    const req = {
      body: {},
      rawBody: {},
      query: {},
      params: {},
      userId: 'u',
      auth: { userId: 'u' },
      requestId: 'r',
      headers: {},
      baseUrl: 'https://api.example',
    };
    await Promise.resolve()
      .then(() => wiring.operation!.run(req as never, recorder as never))
      .catch(() => undefined);
    // The wrapper admits a sandbox route's caller through the bridge service before the run.
    if (wiring.operation.route.auth === 'sandbox') read.add('sandboxBridge');
    // ...and answers repeats of an idempotent create through the idempotency service.
    if (wiring.operation.route.idempotent) read.add('idempotency');
    // ...and a start claims a standby through the pool's claim service where the route declares the
    // pool's refill (shared/services/sandbox-deps.ts asks for it by name: no other bundle carries it).
    if ((declaration.capabilities ?? []).includes('pool:refill')) read.add('poolClaims');
    expect(Object.keys(wiring.services).sort(), `${id}: the services its entry names`).toEqual([...read].sort());
  });

  it("is bundled with its adapters' AWS builders and no others", async () => {
    const wiring = await wiringOf(entry);
    if (!wiring) return;
    // What infra/bundle.ts aliases shared/wiring/aws/builders.ts to in this function's bundle.
    await loadFunctionAdapters();
    const file = builderModuleFor(entry)!;
    const bundled = Object.keys(await import(pathToFileURL(file).href)).sort();
    expect(bundled, `${id}: the builders its bundle carries`).toEqual(
      wiring.adapters.filter((n) => !wiring.replaced.includes(n)).sort(),
    );
    for (const name of wiring.replaced)
      expect(wiring.builders[name]).not.toBe((awsBuilders as Record<string, unknown>)[name]);
  });

  it('declares nothing that none of its adapters can use (no grant without a use)', async () => {
    const wiring = await wiringOf(entry);
    const usable = (wiring?.adapters ?? []).flatMap(allNeeds);
    const unused = uncovered(
      {
        tables: Object.assign({}, ...usable.map((n) => n.tables ?? {})),
        capabilities: usable.flatMap((n) => [...(n.capabilities ?? []), ...(n.anyOf ?? [])]),
      },
      { tables: declaration.tables, capabilities: declaration.capabilities },
    );
    expect(unused, `${id} declares more than its adapters use`).toEqual([]);
  });
});

describe('the AWS builders', () => {
  it('hold one builder per adapter, under its name', () => {
    expect(Object.keys(awsBuilders).sort()).toEqual(Object.keys(adapterNeeds).sort());
  });
});

describe('functionAdapters', () => {
  it('keeps the adapters its services declare where the declaration grants them, with what their builders are built on', () => {
    const store = defineService({ adapters: ['settingsStore', 'sealer'] }, () => null);
    expect(functionAdapters({ tables: { settings: 'read' } }, { settings: store as never })).toEqual(['settingsStore']);
    expect(
      functionAdapters({ tables: { settings: 'read' }, capabilities: ['unseal'] }, { settings: store as never }),
    ).toEqual(['sealer', 'settingsStore']);
    // The cursor key is built on the sealer: granted together, derived together.
    const keyed = defineService({ adapters: ['cursorKey'] }, () => null);
    expect(
      functionAdapters({ tables: { keys: 'write' }, capabilities: ['seal', 'unseal'] }, { cursors: keyed as never }),
    ).toEqual(['cursorKey', 'sealer']);
    // On AWS the event feed pushes to the stream's connections: without that grant it is absent.
    const feed = defineService({ adapters: ['eventFeed'] }, () => null);
    expect(functionAdapters({ tables: { events: 'read' } }, { events: feed as never })).toEqual([]);
    expect(
      functionAdapters(
        { tables: { events: 'read', streamConnections: 'read' }, capabilities: ['stream:push'] },
        { events: feed as never },
      ),
    ).toEqual(['eventFeed', 'eventStore', 'streamConnectionStore', 'streamPush']);
  });

  it('gives a service a declared adapter its route does not grant as a stand-in that refuses its first use', async () => {
    const fake = { get: async () => undefined, put: async () => true, update: async () => undefined };
    const declared: Declaration = { tables: { settings: 'read' } };
    const services = servicesOf('getSettings', wire('getSettings', declared, { settingsStore: () => fake }), {
      settings,
    });
    // The settings service declares the sealer; this route grants no seal or unseal: built, and refused when used.
    await expect(services.settings.find('u')).resolves.toBeNull();
    await expect(async () => services.settings.sealFor('u', 'x')).rejects.toThrow(
      /getSettings: used sealer\.\w+, an adapter its declaration does not grant/,
    );
  });
});

describe('defineService', () => {
  const fake = { get: async () => undefined, put: async () => true, update: async () => undefined };
  const adapters = wire('getSettings', { tables: { settings: 'read' } }, { settingsStore: () => fake });

  it('refuses, outside Lambda, an adapter or a service its factory does not declare', () => {
    const sneaky = defineService({ adapters: [] }, (c) =>
      // The compiler refuses this too; the cast stands for a factory that got past it.
      (c as unknown as { adapter(n: string): { get(): unknown } }).adapter('settingsStore').get(),
    );
    expect(() => servicesOf('getSettings', adapters, { settings: sneaky as never }).settings).toThrow(
      'getSettings: a service used the settingsStore adapter, which its factory does not declare',
    );
    const borrower = defineService({ adapters: [] }, (c) =>
      (c as unknown as { use(f: unknown): unknown }).use(cursors),
    );
    expect(() => servicesOf('getSettings', adapters, { settings: borrower as never }).settings).toThrow(
      /a service used a service its factory does not declare/,
    );
  });
});

describe('wire', () => {
  const declared: Declaration = { tables: { settings: 'read' } };

  it('refuses an adapter the function does not have', () => {
    const adapters = wire('getSettings', declared, { settingsStore });
    expect(() => adapters.sealer).toThrow(WiringError);
    expect(() => adapters.sealer).toThrow(/does not have the sealer adapter/);
  });

  it('refuses to build an adapter the declaration does not cover, naming what is missing', () => {
    const adapters = wire('getSettings', { tables: {} }, { settingsStore });
    expect(() => adapters.settingsStore).toThrow(
      "getSettings: building settingsStore needs tables.settings: 'read', which its declaration does not name",
    );
  });

  it('refuses a call that needs more than the declaration gives (a write on a read declaration)', async () => {
    const fake = { get: async () => undefined, put: async () => true, update: async () => undefined };
    const adapters = wire('getSettings', declared, { settingsStore: () => fake });
    await expect(adapters.settingsStore.get('u')).resolves.toBeUndefined();
    expect(() => adapters.settingsStore.put({} as never, 0)).toThrow(
      "settingsStore.put() needs tables.settings: 'write'",
    );
  });

  it('refuses a service the entry does not name, and builds one it names over the wired adapters', async () => {
    const fake = { get: async () => undefined, put: async () => true, update: async () => undefined };
    const services = servicesOf('getSettings', wire('getSettings', declared, { settingsStore: () => fake }), {
      settings,
    });
    expect(() => services.conversationReads).toThrow(WiringError);
    expect(() => services.sandboxes).toThrow('getSettings: its entry does not name the sandboxes service');
    expect(services.settings).toBe(services.settings);
    // Built over the adapters it was given.
    await expect(services.settings.find('u')).resolves.toBeNull();
  });

  it('holds seal and open to their own capabilities', async () => {
    const sealer = { seal: async (v: string) => `s:${v}`, open: async (v: string) => v.slice(2) };
    const adapters = wire('sandboxCheckIn', { tables: {}, capabilities: ['seal'] }, { sealer: () => sealer });
    await expect(adapters.sealer.seal('x', 'u')).resolves.toBe('s:x');
    expect(() => adapters.sealer.open('s:x', 'u')).toThrow("sealer.open() needs capability 'unseal'");
  });
});
