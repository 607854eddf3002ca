import { readFileSync } from 'node:fs';
import { DEFAULT_PLANS, parsePlans, type Plans } from '#shared/plans/model.ts';

/** Local plans: the JSON file `path` (`PLANS_FILE`, default `config/plans.json`), checked when read. */
export function filePlans(path: string): Plans {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Configuration error: PLANS_FILE: cannot read plans from ${path}: ${(err as Error).message}`);
  }
  return parsePlans(raw, `PLANS_FILE ${path}`);
}

/** AWS plans: the JSON the CDK app writes into `PLANS` from the context key `plans` (empty: the built-in defaults). */
export function envPlans(value: string | undefined): Plans {
  if (!value) return DEFAULT_PLANS;
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch (err) {
    throw new Error(`Configuration error: PLANS is not JSON: ${(err as Error).message}`);
  }
  return parsePlans(raw, 'PLANS');
}
