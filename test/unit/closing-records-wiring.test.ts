import { describe, expect, it } from 'vitest';
import { eventFunctions } from '#shared/functions.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';
import type { FunctionWiring } from '#shared/wiring/aws.ts';
import { uncovered, type Declaration } from '#shared/wiring/needs.ts';

/**
 * Every function that can stop a running sandbox (its entry builds the sandbox runtime and store) writes the
 * closing record of what ran since the last heartbeat (docs/billing.md, "Closing records"): it wires
 * the ledger, the specs and the prices, and its declaration allows the ledger's write. Without this a
 * path that pauses would log a wiring error and leave that tail unbilled.
 */
const functions: { id: string; entry: string; declaration: Declaration }[] = [
  ...(routes as readonly RouteDef[]).map((r) => ({ id: r.id, entry: r.entry, declaration: r })),
  ...eventFunctions.map((f) => ({ id: f.id, entry: f.entry, declaration: f })),
];

describe('closing records are wired wherever a sandbox can stop', async () => {
  const stopping: string[] = [];
  for (const f of functions) {
    const mod = (await import(`../../${f.entry}`)) as { handler: { wiring?: FunctionWiring } };
    // The runtime and the sandboxes' records: the pool's refill stops standbys only, never a user's sandbox.
    const adapters = mod.handler.wiring?.adapters ?? [];
    if (adapters.includes('sandboxRuntime') && adapters.includes('sandboxStore')) stopping.push(f.id);
  }

  it('finds the functions that stop sandboxes', () => {
    expect(stopping).toEqual(expect.arrayContaining(['pauseSandbox', 'deleteSandbox', 'sweeper', 'ecsEvents']));
  });

  it.each(functions.filter((f) => stopping.includes(f.id)))(
    '$id wires the ledger, the specs and the prices',
    async (f) => {
      const mod = (await import(`../../${f.entry}`)) as { handler: { wiring: FunctionWiring } };
      expect(mod.handler.wiring.adapters).toEqual(expect.arrayContaining(['usageStore', 'specs', 'prices']));
      expect(uncovered(f.declaration, { tables: { usage: 'write' }, capabilities: ['specs', 'prices'] })).toEqual([]);
    },
  );
});
