import { allowedOrigins } from '#shared/http/cors.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The allowed browser origins from CORS_ORIGINS (the declaration's `origins` capability gives it). */
export const origins: Builder<'origins'> = () => allowedOrigins();
