/**
 * An object whose members are built on first use and then kept. A function bundle builds only
 * the adapters its handler touches, so it needs only those adapters' configuration and grants.
 */
export function lazy<T extends object>(factories: { [K in keyof T]: () => T[K] }): T {
  const out = {} as T;
  for (const key of Object.keys(factories) as (keyof T)[]) {
    let value: T[typeof key] | undefined;
    let built = false;
    Object.defineProperty(out, key, {
      enumerable: true,
      get: () => {
        if (!built) {
          value = factories[key]();
          built = true;
        }
        return value;
      },
    });
  }
  return out;
}
