import { z } from 'zod';
import type { RouteDef } from '#shared/http/route.ts';
import { maskedSettingsSchema, saveSettingsResponseSchema, settingsInputSchema } from '#shared/settings/model.ts';

/**
 * The one route table. The CDK app makes one API Gateway route and one Lambda per entry, the
 * local gateway serves it, the OpenAPI document is generated from it, and the route tests walk it.
 * Plain data: no AWS imports here.
 */
export const routes = [
  {
    id: 'health',
    method: 'GET',
    path: '/health',
    entry: 'functions/health/get.ts',
    auth: 'none',
    summary: 'Liveness check',
    tag: 'service',
    tables: {},
    response: z.object({ status: z.literal('ok') }),
  },
  {
    id: 'openapi',
    method: 'GET',
    path: '/openapi.json',
    entry: 'functions/docs/openapi.ts',
    auth: 'none',
    summary: 'The OpenAPI 3.1 document of this API',
    tag: 'service',
    tables: {},
  },
  {
    id: 'docs',
    method: 'GET',
    path: '/docs',
    entry: 'functions/docs/page.ts',
    auth: 'none',
    summary: 'Browsable API documentation',
    tag: 'service',
    tables: {},
  },
  {
    id: 'getSettings',
    method: 'GET',
    path: '/api/settings',
    entry: 'functions/settings/get.ts',
    auth: 'user',
    summary: "The caller's settings, secrets masked; 404 before any were stored",
    tag: 'settings',
    tables: { settings: 'read' },
    response: maskedSettingsSchema,
  },
  {
    id: 'saveSettings',
    method: 'POST',
    path: '/api/settings',
    entry: 'functions/settings/save.ts',
    auth: 'user',
    summary: "Store (merge) the caller's settings",
    tag: 'settings',
    tables: { settings: 'write', keys: 'read' },
    capabilities: ['seal', 'unseal'],
    body: settingsInputSchema,
    response: saveSettingsResponseSchema,
  },
  {
    id: 'getCurrentUser',
    method: 'GET',
    path: '/api/v1/users/me',
    entry: 'functions/users/me.ts',
    auth: 'user',
    summary: 'The calling user and their masked settings',
    tag: 'users',
    tables: { settings: 'read' },
    response: z.object({ id: z.string(), settings: maskedSettingsSchema.nullable() }),
  },
] as const satisfies readonly RouteDef[];
