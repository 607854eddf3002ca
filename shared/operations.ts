import * as accounts from '#shared/accounts/operations.ts';
import * as auth from '#shared/auth/operations.ts';
import * as billing from '#shared/billing/operations.ts';
import * as agentServer from '#shared/conversations/agent-server-operations.ts';
import * as oidc from '#shared/auth/oidc-operations.ts';
import * as conversations from '#shared/conversations/operations.ts';
import * as legacyConversations from '#shared/conversations/legacy-operations.ts';
import * as conversationBridge from '#shared/conversations/bridge-operations.ts';
import * as agentServerEvents from '#shared/events/agent-server-operations.ts';
import * as events from '#shared/events/operations.ts';
import type { Operation } from '#shared/http/operation.ts';
import * as service from '#shared/http/service-operations.ts';
import * as options from '#shared/options/operations.ts';
import * as sandboxSpecs from '#shared/sandbox-specs/operations.ts';
import * as sandboxBridge from '#shared/sandboxes/bridge-operations.ts';
import * as workspace from '#shared/sandboxes/workspace-operations.ts';
import * as sandboxes from '#shared/sandboxes/operations.ts';
import * as snapshots from '#shared/sandboxes/snapshots/snapshot-operations.ts';
import * as canvasSettings from '#shared/settings/canvas-operations.ts';
import * as pool from '#shared/sandboxes/pool-operations.ts';
import * as settings from '#shared/settings/operations.ts';
import * as secrets from '#shared/settings/secrets-operations.ts';
import * as stream from '#shared/stream/operations.ts';
import * as usage from '#shared/usage/operations.ts';

/**
 * Every route's operation but the OpenAPI document's own: where the document (and the route tests)
 * find each route's schemas. A Lambda entry imports its one operation, never this list.
 */
export const operations: readonly Operation[] = [
  accounts,
  auth,
  billing,
  agentServer,
  agentServerEvents,
  oidc,
  conversations,
  legacyConversations,
  conversationBridge,
  events,
  service,
  options,
  sandboxSpecs,
  sandboxBridge,
  sandboxes,
  snapshots,
  pool,
  settings,
  canvasSettings,
  secrets,
  stream,
  usage,
  workspace,
].flatMap((module) => Object.values(module) as Operation[]);
