/*
 * `npm run generate:client`: writes shared/client/schema.ts, the typed client's types, from the OpenAPI
 * document the API serves (generated from the route table and the operations' zod schemas). Run it
 * after changing a route or a schema; test/unit/client-types.test.ts fails until it is run.
 */
import { writeFileSync } from 'node:fs';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '#infra/client-types.ts';

writeFileSync(CLIENT_SCHEMA_FILE, await clientSchemaSource());
console.log(`wrote ${CLIENT_SCHEMA_FILE.pathname}`);
