import { config, type ZodMiniLazy } from 'zod/v4-mini';
import en from 'zod/v4/locales/en.js';

/*
 * The schema library of everything a function bundles: zod/mini, about 15 KB where zod's classic
 * API is about 100 KB and ~10 ms more to load on every cold start. Mini installs no locale (its
 * messages would all read "Invalid input"), so this module installs zod's English one: a 422 names
 * what is wrong exactly as classic zod did. Schema modules import zod from here, never directly.
 *
 * Why `zod/v4-mini` (the same module as `zod/mini` under its other name): the sandbox image's one-file
 * bundle (sandbox/Dockerfile) reaches mini also from the lazily loaded agent, through the MCP SDK's
 * `zod/v4-mini`, so esbuild wraps mini for lazy initialization; it then initializes it before this
 * module only when imported under that same name (esbuild issue 3357). Under `zod/mini` the program
 * crashed at load ("ZodMiniLazy is not a constructor"); test/unit/bundle-schemas.test.ts loads it.
 */
config(en());

export * from 'zod/v4-mini';

/** The schema a `z.lazy` stands for (built once, on first use): mini has no `.unwrap()`. */
export const unlazy = <T extends ZodMiniLazy>(schema: T): T['_zod']['innerType'] => schema._zod.innerType;
