/**
 * A required environment variable, failing with its name: how an adapter reads the configuration its
 * function's declaration gave it (shared/wiring/needs.ts derives which variables each function gets).
 */
export function requireEnv(name: string, what: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Configuration error: ${name} (${what}) is not set`);
  return value;
}
