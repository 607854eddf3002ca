import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { eventFunctions } from '#shared/functions.ts';
import { llmGatewayRoute, routes } from '#shared/routes.ts';
import type { FunctionWiring } from '#shared/wiring/aws.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..');
const REGISTRY = resolve(REPO_ROOT, 'shared/wiring/aws/builders.ts');

/** Each function's adapters whose shared builder its bundle carries: derived at load, by entry. */
let adaptersByEntry: Map<string, string[]> | undefined;

/**
 * Loads every function's entry as the local stack and the tests do (no Lambda define), and keeps the
 * adapters its wiring derives from its services and declaration (shared/wiring/function-adapters.ts),
 * less those whose builder the entry gives itself. The CDK app awaits this before it builds the stack
 * (infra/app.ts), as do the bundle checks and the benchmark; a synthesis that bundles nothing (the
 * infra tests) does without.
 */
export async function loadFunctionAdapters(): Promise<void> {
  if (adaptersByEntry) return;
  const entries = [...routes.map((r) => r.entry), ...eventFunctions.map((f) => f.entry), llmGatewayRoute.entry];
  const map = new Map<string, string[]>();
  for (const entry of new Set(entries)) {
    const mod = (await import(pathToFileURL(resolve(REPO_ROOT, entry)).href)) as {
      handler?: { wiring?: FunctionWiring };
    };
    const wiring = mod.handler?.wiring;
    map.set(entry, wiring ? wiring.adapters.filter((n) => !wiring.replaced.includes(n)) : []);
  }
  adaptersByEntry = map;
}

/** The registry's `export { names } from 'module'` lines, as adapter name -> module: read once per process. */
let modules: Map<string, string> | undefined;
function registryModules(): Map<string, string> {
  if (modules) return modules;
  modules = new Map<string, string>();
  for (const [, names, from] of readFileSync(REGISTRY, 'utf8').matchAll(/^export \{([^}]+)\} from '([^']+)';$/gm))
    for (const name of names!.split(',').map((n) => n.trim())) if (name) modules.set(name, from!);
  return modules;
}

/**
 * The registry a bundle of `entry` carries in place of shared/wiring/aws/builders.ts: the same lines,
 * kept to that function's adapters, written under `.build/builders/` (ignored by git). Undefined when
 * the adapters were not loaded: that bundle would carry every builder.
 */
export function builderModuleFor(entry: string): string | undefined {
  const names = adaptersByEntry?.get(entry);
  if (!names) return undefined;
  const registry = registryModules();
  const byModule = new Map<string, string[]>();
  for (const name of names) {
    const from = registry.get(name);
    if (!from) throw new Error(`${entry}: no AWS builder named ${name} in shared/wiring/aws/builders.ts`);
    byModule.set(from, [...(byModule.get(from) ?? []), name]);
  }
  const text = `${[...byModule].map(([from, ns]) => `export { ${ns.join(', ')} } from '${from}';`).join('\n')}\nexport {};\n`;
  const file = resolve(REPO_ROOT, '.build/builders', entry);
  mkdirSync(dirname(file), { recursive: true });
  // Written only when it changed: a bundle's input stays the same file for an unchanged function.
  if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text);
  return file;
}
