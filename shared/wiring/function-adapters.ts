import { adaptersOf, type AnyServiceFactory, type ServiceFactories } from '#shared/services.ts';
import { adapterNeeds, type AdapterName } from '#shared/wiring/adapters.ts';
import { uncovered, type Declaration } from '#shared/wiring/needs.ts';

/** Whether `declared` grants what building `name` asks, and what it is built on asks. */
function granted(declared: Declaration, name: AdapterName): boolean {
  const { build, builtOn = [] } = adapterNeeds[name];
  return uncovered(declared, build).length === 0 && builtOn.every((n) => granted(declared, n));
}

/**
 * A function's adapters, derived: those the services its entry names declare (with the services they
 * are built on), plus `own` (an event function's handler reads a few adapters itself), with what
 * their builders are built on, kept where the function's declaration grants them. The declaration
 * stays the one statement of a function's IAM and environment: a service used by several functions
 * declares every adapter any of its methods touches, and each function gets those its route grants.
 * A path that needs an adapter its route does not grant fails with a WiringError in the local stack
 * and every test (shared/wiring/adapters.ts `wire`).
 */
export function functionAdapters(
  declared: Declaration,
  services: ServiceFactories,
  own: readonly AdapterName[] = [],
): AdapterName[] {
  const declaredByServices = [...adaptersOf(Object.values(services) as AnyServiceFactory[]), ...own];
  const wanted = new Set<AdapterName>(declaredByServices.filter((name) => granted(declared, name)));
  // What a granted adapter is built on is granted too (`granted`); a Set's iteration visits what is added during it.
  for (const name of wanted) for (const on of adapterNeeds[name].builtOn ?? []) wanted.add(on);
  return [...wanted].sort();
}
