import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEndpointFile, useLocalTables } from '#infra/local/dynamo.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { responseText, type Answer } from '#test/adversarial/client.ts';
import { runFuzz } from '#test/adversarial/fuzz.ts';
import { findLeaks, plant } from '#test/adversarial/secrets.ts';
import { startWorld, type SpySandbox, type World } from '#test/adversarial/world.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { startStripeFake, type StripeFake } from '#test/helpers/stripe-fake.ts';
import { STRIPE_API_VERSION, STRIPE_METERS } from '#shared/billing/stripe.ts';

/**
 * The service attacked as a hostile user and a hostile sandbox would, over HTTP against `npm start`
 * (a child process): fuzz over every route, a cross-user matrix, sandbox-credential misuse, and a
 * sweep of every response, log line and stored start task for the secrets planted on the way.
 */
// Run with `node -e`: a contained sandbox sees neither the checkout nor its node_modules.
const MCP_SERVER = readFileSync(new URL('../fixtures/agent/mcp-reverse-server.mjs', import.meta.url), 'utf8');
const FUZZ_REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

interface Player {
  userId: string;
  key: string;
  sandbox: SpySandbox;
  conversationId: string;
  startTaskId: string;
  /** The id of the user's API key (GET /api/keys). */
  keyId: string;
  /** The conversation made through the legacy route. */
  legacyConversationId: string;
  /** Strings only this user's data holds: another user must never see them. */
  markers: string[];
  /** Their organization (a personal one, or the one the keys CLI placed them in). */
  orgId: string;
}

let world: World;
let llm: ScriptedLlm;
const players: Record<string, Player> = {};
/** Planted fake secrets, by a name saying where they were planted. */
const secrets: Record<string, string> = {};
/**
 * The platform's upstream keys (the env variables config/platform-llms.json names), planted in the
 * server's environment: no answer, log, stored item or start configuration may ever hold them.
 */
const platformKeys = {
  PLATFORM_ANTHROPIC_API_KEY: plant('platform-anthropic-key', 'operator'),
  PLATFORM_OPENAI_API_KEY: plant('platform-openai-key', 'operator'),
  // The Stripe secret key (docs/billing.md, "Stripe"): Stripe is a loopback fake that accepts only it.
  STRIPE_API_KEY: plant('stripe-secret-key', 'operator'),
};
let stripe: StripeFake;
/**
 * The platform model of the suite (docs/platform-llms.md): served by the scripted LLM with the planted
 * operator key, in the plan of every player, and carol's settings' model, so her sandbox's start
 * configuration carries a gateway credential (`acsl.`) and the sweep sees one. Every credential a start
 * configuration carried joins the planted secrets: no answer, log line or stored item may hold it.
 */
const PLATFORM_MODEL = 'platform/scripted';
/** The `acsl.` credentials in the start configurations seen. */
const gatewayCredentials = (text: string) =>
  [...text.matchAll(/acsl\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}/g)].map((m) => m[0]);
/** The suite's platform models and plans files (the world's server starts with them). */
function platformFiles(dir: string): Record<string, string> {
  const roomy = JSON.parse(readFileSync(new URL('../fixtures/plans/roomy.json', import.meta.url), 'utf8'));
  roomy.plans.roomy.platform_models = [PLATFORM_MODEL, 'platform/claude-sonnet'];
  const price = { input: 1, output: 2 };
  const models = [
    {
      model: PLATFORM_MODEL,
      provider: 'openai',
      upstream_model: 'scripted-upstream',
      base_url: llm.baseUrl,
      api_key_env: 'PLATFORM_OPENAI_API_KEY',
      usd_per_mtok: price,
      markup: 0.2,
      max_output_tokens: 4096,
    },
    {
      // Never reached (a closed port): its key is planted all the same.
      model: 'platform/claude-sonnet',
      provider: 'anthropic',
      upstream_model: 'claude-upstream',
      base_url: 'http://127.0.0.1:9/v1',
      api_key_env: 'PLATFORM_ANTHROPIC_API_KEY',
      usd_per_mtok: price,
      markup: 0.2,
      max_output_tokens: 4096,
    },
  ];
  writeFileSync(join(dir, 'plans.json'), JSON.stringify(roomy));
  writeFileSync(join(dir, 'platform-llms.json'), JSON.stringify(models));
  return { PLANS_FILE: join(dir, 'plans.json'), PLATFORM_LLMS_FILE: join(dir, 'platform-llms.json') };
}
/** Start configurations the spy sandboxes fetched: the one answer that rightly holds the secrets. */
const startConfigSeen: string[] = [];

const call = (method: string, path: string, o: Parameters<World['client']['call']>[2] = {}) =>
  world.client.call(method, path, o);
const userRoutes = (routes as readonly RouteDef[]).filter((r) => r.auth === 'user');
const sandboxRoutes = (routes as readonly RouteDef[]).filter((r) => r.auth === 'sandbox');

/** Settings and a conversation with a fake secret in every secret field. */
function plantedSettings(userId: string) {
  const s = (what: string) => (secrets[`${userId}.${what}`] = plant(what, userId));
  return {
    llm_model: `scripted-${userId}`,
    llm_api_key: s('llm_api_key'),
    llm_base_url: llm.baseUrl,
    search_api_key: s('search_api_key'),
    sandbox_api_key: s('sandbox_api_key'),
    secrets_store: {
      provider_tokens: {
        github: { token: s('github_token') },
        gitlab: { token: s('gitlab_token'), host: 'http://127.0.0.1:9' },
      },
      // A value whose URL-encoded form differs from it.
      custom_secrets: {
        PLANT_CUSTOM: `${s('custom')}/+ x`,
        PLANT_OTHER: { secret: s('custom_other'), description: 'planted' },
      },
    },
    mcp_config: {
      sse_servers: [{ url: 'http://127.0.0.1:9/sse', api_key: s('settings_sse_key') }],
      shttp_servers: [{ url: 'http://127.0.0.1:9/mcp', api_key: s('settings_shttp_key') }],
      stdio_servers: [
        { name: 'reverse', command: process.execPath, args: ['-e', MCP_SERVER], env: { GREETING: s('settings_env') } },
      ],
    },
  };
}

function plantedMcp(userId: string, tag: string) {
  const s = (what: string) => (secrets[`${userId}.${tag}.${what}`] = plant(`${tag}-${what}`, userId));
  return {
    sse_servers: [{ url: 'http://127.0.0.1:9/conv-sse', api_key: s('sse_key') }],
    shttp_servers: [{ url: 'http://127.0.0.1:9/conv-mcp', api_key: s('shttp_key') }],
    stdio_servers: [
      {
        name: 'conv',
        command: process.execPath,
        args: ['-e', MCP_SERVER],
        env: { GREETING: s('env'), OTHER: s('env_other') },
      },
    ],
  };
}

async function newPlayer(
  userId: string,
  org?: { orgId: string; role: string },
  settings: { llm_model?: string } = {},
): Promise<Player> {
  const key = await world.newUser(userId, org);
  const saved = await call('POST', '/api/settings', { key, body: { ...plantedSettings(userId), ...settings } });
  expect(saved.status, saved.text).toBe(200);
  const sandbox = await world.spySandbox(key);
  const title = `title-of-${userId}-${Math.random().toString(36).slice(2)}`;
  const started = await call('POST', '/api/v1/app-conversations', {
    key,
    body: {
      sandbox_id: sandbox.id,
      title,
      mcp_config: plantedMcp(userId, 'v1'),
      initial_message: { content: [{ type: 'text', text: `message-of-${userId}` }] },
    },
  });
  expect(started.status, started.text).toBe(200);
  // The spy fetches its start configuration as the real program would (this answer rightly holds secrets).
  const config = await call(
    'GET',
    `/api/v1/webhooks/${sandbox.id}/conversations/${started.body.app_conversation_id}/start-config`,
    { key: sandbox.key, holdsSecrets: true },
  );
  expect(config.status).toBe(200);
  startConfigSeen.push(config.text);
  for (const credential of gatewayCredentials(config.text)) {
    secrets[`${userId}.gateway_credential`] = credential;
    // The spy calls the gateway with it, as the agent would: the platform key goes upstream, never back.
    const before = llm.requests.length;
    llm.enqueue(reply.text(`gateway-answer-${userId}`));
    const answer = await call('POST', '/llm/v1/chat/completions', {
      headers: { authorization: `Bearer ${credential}` },
      body: { model: settings.llm_model, messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.choices[0].message.content).toBe(`gateway-answer-${userId}`);
    expect(llm.requests.slice(before).map((r) => r.headers.authorization)).toEqual([
      `Bearer ${platformKeys.PLATFORM_OPENAI_API_KEY}`,
    ]);
  }
  expect(config.body.mcp_config.stdio_servers.find((s: { name: string }) => s.name === 'conv').env.GREETING).toBe(
    secrets[`${userId}.v1.env`],
  );
  // ... and posts an event, so the conversation has data of its own.
  const event = {
    kind: 'MessageEvent',
    id: `ev-${userId}`,
    timestamp: new Date().toISOString(),
    source: 'agent',
    text: `event-of-${userId}`,
  };
  expect(
    (
      await call('POST', `/api/v1/webhooks/${sandbox.id}/events/${started.body.app_conversation_id}?first_seq=1`, {
        key: sandbox.key,
        body: [event],
      })
    ).status,
  ).toBe(200);
  const legacy = await call('POST', '/api/conversations', {
    key,
    body: { initial_user_msg: `legacy-of-${userId}`, mcp_config: plantedMcp(userId, 'legacy') },
  });
  expect(legacy.status, legacy.text).toBe(200);
  // The sandbox's own key reaches only the sandbox: no user-facing answer may hold it.
  secrets[`${userId}.sandbox_session_key`] = sandbox.key;
  const keyId: string = (await call('GET', '/api/keys', { key })).body[0].id;
  const orgId: string = (await call('GET', '/api/v1/users/me', { key })).body.org_id;
  return {
    userId,
    orgId,
    key,
    keyId,
    legacyConversationId: legacy.body.conversation_id,
    sandbox,
    conversationId: started.body.app_conversation_id,
    startTaskId: started.body.id,
    markers: [
      sandbox.id,
      started.body.id,
      title,
      `event-of-${userId}`,
      `message-of-${userId}`,
      `scripted-${userId}`,
      `legacy-of-${userId}`,
      legacy.body.conversation_id,
      keyId,
    ],
  };
}

const platformDir = mkdtempSync(join(tmpdir(), 'acs-adversarial-platform-'));
beforeAll(async () => {
  llm = await startScriptedLlm();
  // Room for every sandbox the suite starts, so none of the players' is paused to make room.
  stripe = await startStripeFake({
    meters: Object.values(STRIPE_METERS),
    apiVersion: STRIPE_API_VERSION,
    secretKey: platformKeys.STRIPE_API_KEY,
  });
  world = await startWorld({
    MAX_RUNNING_SANDBOXES: '100',
    ...platformKeys,
    STRIPE_API_BASE: stripe.url,
    ...platformFiles(platformDir),
  });
  for (const [name, value] of Object.entries(platformKeys)) secrets[`operator.${name}`] = value;
  for (const userId of ['alice', 'bob']) players[userId] = await newPlayer(userId);
  players.carol = await newPlayer('carol', undefined, { llm_model: PLATFORM_MODEL });
}, 180_000);

afterAll(async () => {
  await world?.stop();
  await llm?.close();
  await stripe?.close();
  rmSync(platformDir, { recursive: true, force: true });
});

/**
 * What each user route looks like aimed at the victim's resources. A route missing here fails the
 * coverage test, so a new route cannot skip the matrix.
 */
const foreign: Record<
  string,
  (v: Player) => {
    method?: string;
    path: string;
    body?: unknown;
    expect: 'own-only' | 404 | 'null-list' | 'empty-items' | number[];
    /** Puts back what the call changed of the attacker's own data (a route with no id to aim at another's). */
    restore?: (attacker: Player) => Promise<unknown>;
  }
> = {
  getSettings: () => ({ path: '/api/settings', expect: 'own-only' }),
  saveSettings: () => ({ path: '/api/settings', method: 'POST', body: {}, expect: 'own-only' }),
  getCurrentUser: () => ({ path: '/api/v1/users/me', expect: 'own-only' }),
  exportMyData: () => ({ path: '/api/v1/users/me/export', expect: 'own-only' }),
  // The victim's id as the confirmation deletes no one: it is not the caller's own.
  deleteMyAccount: (v) => ({ path: '/api/v1/users/me', method: 'DELETE', body: { confirm: v.userId }, expect: [422] }),
  searchSandboxes: () => ({ path: '/api/v1/sandboxes/search', expect: 'own-only' }),
  getSandboxes: (v) => ({ path: `/api/v1/sandboxes?id=${v.sandbox.id}`, expect: 'null-list' }),
  startSandbox: (v) => ({
    path: `/api/v1/sandboxes?sandbox_spec_id=${v.sandbox.id}`,
    method: 'POST',
    expect: [404, 422],
  }),
  pauseSandbox: (v) => ({ path: `/api/v1/sandboxes/${v.sandbox.id}/pause`, method: 'POST', expect: 404 }),
  resumeSandbox: (v) => ({ path: `/api/v1/sandboxes/${v.sandbox.id}/resume`, method: 'POST', expect: 404 }),
  deleteSandbox: (v) => ({ path: `/api/v1/sandboxes/${v.sandbox.id}`, method: 'DELETE', expect: 404 }),
  searchSandboxSpecs: () => ({ path: '/api/v1/sandbox-specs/search', expect: 'own-only' }),
  getSandboxSpecs: () => ({ path: '/api/v1/sandbox-specs?id=spy', expect: 'own-only' }),
  startConversation: (v) => ({
    path: '/api/v1/app-conversations',
    method: 'POST',
    body: { sandbox_id: v.sandbox.id },
    expect: 404,
  }),
  listConversations: (v) => ({ path: `/api/v1/app-conversations?ids=${v.conversationId}`, expect: 'null-list' }),
  searchConversations: () => ({ path: '/api/v1/app-conversations/search', expect: 'own-only' }),
  countConversations: () => ({ path: '/api/v1/app-conversations/count', expect: 'own-only' }),
  searchStartTasks: (v) => ({
    path: `/api/v1/app-conversations/start-tasks/search?conversation_id__eq=${v.conversationId}`,
    expect: 'empty-items',
  }),
  getStartTasks: (v) => ({ path: `/api/v1/app-conversations/start-tasks?ids=${v.startTaskId}`, expect: 'null-list' }),
  sendMessage: (v) => ({
    path: `/api/conversations/${v.conversationId}/events`,
    method: 'POST',
    body: { content: [{ type: 'text', text: 'hi' }] },
    expect: 404,
  }),
  pauseConversation: (v) => ({ path: `/api/conversations/${v.conversationId}/pause`, method: 'POST', expect: 404 }),
  runConversation: (v) => ({ path: `/api/conversations/${v.conversationId}/run`, method: 'POST', expect: 404 }),
  respondToConfirmation: (v) => ({
    path: `/api/conversations/${v.conversationId}/events/respond_to_confirmation`,
    method: 'POST',
    body: { accept: true },
    expect: 404,
  }),
  // Creates the attacker's own conversation: nothing of the victim's may show in it.
  legacyCreateConversation: (v) => ({
    path: '/api/conversations',
    method: 'POST',
    body: { initial_user_msg: `aimed at ${v.userId}` },
    expect: 'own-only',
  }),
  searchEvents: (v) => ({ path: `/api/v1/events/search?conversation_id__eq=${v.conversationId}`, expect: 404 }),
  countEvents: (v) => ({ path: `/api/v1/events/count?conversation_id__eq=${v.conversationId}`, expect: 404 }),
  listAgents: () => ({ path: '/api/options/agents', expect: 'own-only' }),
  listSecurityAnalyzers: () => ({ path: '/api/options/security-analyzers', expect: 'own-only' }),
  // Signs the attacker in as the attacker.
  authenticate: () => ({ path: '/api/authenticate', method: 'POST', expect: 'own-only' }),
  legacyListConversations: () => ({ path: '/api/conversations', expect: 'own-only' }),
  agentServerSearchConversations: () => ({ path: '/api/conversations/search', expect: 'own-only' }),
  agentServerCountConversations: () => ({ path: '/api/conversations/count', expect: 'own-only' }),
  legacyGetConversation: (v) => ({ path: `/api/conversations/${v.conversationId}`, expect: 404 }),
  legacyUpdateConversation: (v) => ({
    path: `/api/conversations/${v.conversationId}`,
    method: 'PATCH',
    body: { title: 'renamed by another' },
    expect: 404,
  }),
  legacyDeleteConversation: (v) => ({ path: `/api/conversations/${v.conversationId}`, method: 'DELETE', expect: 404 }),
  currentKey: () => ({ path: '/api/keys/current', expect: 'own-only' }),
  agentServerSearchEvents: (v) => ({ path: `/api/conversations/${v.conversationId}/events/search`, expect: 404 }),
  agentServerCountEvents: (v) => ({ path: `/api/conversations/${v.conversationId}/events/count`, expect: 404 }),
  agentServerGetEvent: (v) => ({ path: `/api/conversations/${v.conversationId}/events/some-event`, expect: 404 }),
  agentServerFinalResponse: (v) => ({
    path: `/api/conversations/${v.conversationId}/agent_final_response`,
    expect: 404,
  }),
  agentServerInterrupt: (v) => ({
    path: `/api/conversations/${v.conversationId}/interrupt`,
    method: 'POST',
    expect: 404,
  }),
  revokeConversationKey: (v) => ({
    path: `/api/v1/app-conversations/${v.conversationId}/session-api-key/revoke`,
    method: 'POST',
    expect: 404,
  }),
  createStreamTicket: (v) => ({
    path: `/api/v1/app-conversations/${v.conversationId}/stream-tickets`,
    method: 'POST',
    expect: 404,
  }),
  listKeys: () => ({ path: '/api/keys', expect: 'own-only' }),
  createKey: () => ({ path: '/api/keys', method: 'POST', body: { name: "the attacker's own" }, expect: 'own-only' }),
  deleteKey: (v) => ({ path: `/api/keys/${v.keyId}`, method: 'DELETE', expect: 404 }),
  // Organizations: another organization's id is a 404 whatever the role; operator routes refuse non-operators.
  organizationsList: () => ({ path: '/api/organizations', expect: 'own-only' }),
  getOrg: (v) => ({ path: `/api/v1/orgs/${v.orgId}`, expect: 404 }),
  updateOrg: (v) => ({ path: `/api/v1/orgs/${v.orgId}`, method: 'PATCH', body: { name: 'taken over' }, expect: 404 }),
  listInvitations: (v) => ({ path: `/api/v1/orgs/${v.orgId}/invitations`, expect: 404 }),
  createInvitation: (v) => ({
    path: `/api/v1/orgs/${v.orgId}/invitations`,
    method: 'POST',
    body: { email: 'attacker@example.com', role: 'owner' },
    expect: 404,
  }),
  updateMember: (v) => ({
    path: `/api/v1/orgs/${v.orgId}/members/${v.userId}`,
    method: 'PATCH',
    body: { role: 'member' },
    expect: 404,
  }),
  removeMember: (v) => ({ path: `/api/v1/orgs/${v.orgId}/members/${v.userId}`, method: 'DELETE', expect: 404 }),
  getInvitation: () => ({ path: `/api/v1/invitations/acsi_${'A'.repeat(43)}`, expect: 404 }),
  acceptInvitation: () => ({ path: `/api/v1/invitations/acsi_${'A'.repeat(43)}/accept`, method: 'POST', expect: 404 }),
  adminListUsers: (v) => ({ path: `/api/v1/admin/users?org_id=${v.orgId}`, expect: [403] }),
  adminListOrgs: () => ({ path: '/api/v1/admin/orgs?status=active', expect: [403] }),
  suspendUser: (v) => ({ path: `/api/v1/admin/users/${v.userId}/suspend`, method: 'POST', expect: [403] }),
  reactivateUser: (v) => ({ path: `/api/v1/admin/users/${v.userId}/reactivate`, method: 'POST', expect: [403] }),
  suspendOrg: (v) => ({ path: `/api/v1/admin/orgs/${v.orgId}/suspend`, method: 'POST', expect: [403] }),
  reactivateOrg: (v) => ({ path: `/api/v1/admin/orgs/${v.orgId}/reactivate`, method: 'POST', expect: [403] }),
  listAuditLog: (v) => ({ path: `/api/v1/audit-log?org_id=${v.orgId}`, expect: 404 }),
  // What Agent Canvas reads on load: the caller's own, or a foreign conversation or organization (404).
  canvasGetSettings: () => ({ path: '/api/v1/settings', expect: 'own-only' }),
  canvasSaveSettings: () => ({ path: '/api/v1/settings', method: 'POST', body: {}, expect: 'own-only' }),
  canvasAgentSettingsSchema: () => ({ path: '/api/v1/settings/agent-schema', expect: 'own-only' }),
  canvasConversationSettingsSchema: () => ({ path: '/api/v1/settings/conversation-schema', expect: 'own-only' }),
  canvasListLlmProfiles: () => ({ path: '/api/v1/settings/profiles', expect: 'own-only' }),
  canvasListOrgLlmProfiles: (v) => ({ path: `/api/organizations/${v.orgId}/profiles`, expect: 404 }),
  canvasListProviderConnections: (v) => ({ path: `/api/organizations/${v.orgId}/provider-connections`, expect: 404 }),
  canvasOrgMe: (v) => ({ path: `/api/organizations/${v.orgId}/me`, expect: 404 }),
  canvasListAgentProfiles: () => ({ path: '/api/agent-profiles', expect: 'own-only' }),
  canvasSearchModels: () => ({ path: '/api/v1/config/models/search', expect: 'own-only' }),
  canvasSearchProviders: () => ({ path: '/api/v1/config/providers/search', expect: 'own-only' }),
  canvasSearchSkills: () => ({ path: '/api/v1/skills/search', expect: 'own-only' }),
  canvasConversationSkills: (v) => ({ path: `/api/v1/app-conversations/${v.conversationId}/skills`, expect: 404 }),
  // The workspace reads (Canvas's Files and Changes tabs, the late UI's git routes on the conversation host).
  workspaceFiles: (v) => ({ path: `/api/v1/app-conversations/${v.conversationId}/files`, expect: 404 }),
  workspaceFile: (v) => ({ path: `/api/v1/app-conversations/${v.conversationId}/file?file_path=a.txt`, expect: 404 }),
  workspaceGitChanges: (v) => ({ path: `/api/v1/app-conversations/${v.conversationId}/git/changes`, expect: 404 }),
  workspaceGitDiff: (v) => ({ path: `/api/v1/app-conversations/${v.conversationId}/git/diff?path=a.txt`, expect: 404 }),
  agentGitChanges: (v) => ({ path: `/api/git/changes/repo?conversation_id=${v.conversationId}`, expect: 404 }),
  agentGitDiff: (v) => ({ path: `/api/git/diff/a.txt?conversation_id=${v.conversationId}`, expect: 404 }),
  canvasSearchConversationEvents: (v) => ({
    path: `/api/v1/conversation/${v.conversationId}/events/search`,
    expect: 404,
  }),
  canvasSearchSecrets: () => ({ path: '/api/v1/secrets/search', expect: 'own-only' }),
  canvasSaveSecret: () => ({
    path: '/api/v1/secrets',
    method: 'POST',
    body: { name: 'ATTACKER_OWN', value: 'x' },
    expect: 'own-only',
    restore: (attacker) => call('DELETE', '/api/v1/secrets/ATTACKER_OWN', { key: attacker.key }),
  }),
  canvasUpdateSecret: () => ({
    path: '/api/v1/secrets/NOT_A_SECRET',
    method: 'PUT',
    body: { name: 'STOLEN' },
    expect: 404,
  }),
  canvasDeleteSecret: () => ({ path: '/api/v1/secrets/NOT_A_SECRET', method: 'DELETE', expect: 404 }),
  // The late-2025 web UI's calls. Secrets are named per user: the victim's names are the attacker's own
  // (every player has PLANT_OTHER), so a create of it is the attacker's 409 and an unknown name a 404.
  legacyConversationConfig: (v) => ({ path: `/api/conversations/${v.conversationId}/config`, expect: 404 }),
  listSecrets: () => ({ path: '/api/secrets', expect: 'own-only' }),
  createSecret: () => ({
    path: '/api/secrets',
    method: 'POST',
    body: { name: 'PLANT_OTHER', value: 'taken over' },
    expect: [409],
  }),
  updateSecret: () => ({ path: '/api/secrets/NOT_A_SECRET', method: 'PUT', body: { name: 'STOLEN' }, expect: 404 }),
  deleteSecret: () => ({ path: '/api/secrets/NOT_A_SECRET', method: 'DELETE', expect: 404 }),
  addGitProviders: () => ({
    path: '/api/add-git-providers',
    method: 'POST',
    body: { provider_tokens: {} },
    expect: 'own-only',
  }),
  unsetProviderTokens: () => ({
    path: '/api/unset-provider-tokens',
    method: 'POST',
    expect: 'own-only',
    restore: (attacker) =>
      call('POST', '/api/settings', {
        key: attacker.key,
        body: {
          secrets_store: {
            provider_tokens: {
              github: { token: secrets[`${attacker.userId}.github_token`] },
              gitlab: { token: secrets[`${attacker.userId}.gitlab_token`], host: 'http://127.0.0.1:9' },
            },
          },
        },
      }),
  }),
  // Operators only: the victim's organization's own owner is refused too.
  setOrgPlan: (v) => ({
    path: `/api/v1/admin/orgs/${v.orgId}/plan`,
    method: 'PUT',
    body: { plan: 'roomy' },
    expect: [403],
  }),
  // Operators only: a user's own organization's ledger is not theirs to export either.
  exportBilling: () => ({
    path: '/api/v1/admin/billing/exports',
    method: 'POST',
    body: { from: '2025-01-01', to: '2025-01-01' },
    expect: [403],
  }),
  setOrgBilling: (v) => ({
    path: `/api/v1/admin/orgs/${v.orgId}/billing`,
    method: 'PUT',
    body: { stripe_customer_id: 'cus_Attacker' },
    expect: [403],
  }),
  reportStripeUsage: () => ({
    path: '/api/v1/admin/billing/stripe-reports',
    method: 'POST',
    body: { from: new Date().toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10) },
    expect: [403],
  }),
  // No parameter names another organization: an org_id in the query is ignored, the caller's own answers.
  getUsage: (v) => ({ path: `/api/v1/usage?org_id=${v.orgId}`, expect: 'own-only' }),
  grantCredits: (v) => ({
    path: `/api/v1/admin/orgs/${v.orgId}/credits`,
    method: 'POST',
    body: { amount_usd: 1000 },
    expect: [403],
  }),
  recordCorrection: (v) => ({
    path: `/api/v1/admin/orgs/${v.orgId}/corrections`,
    method: 'POST',
    body: { amount_usd: 1000, day: '2025-01-01', reason: 'attacker' },
    expect: [403],
  }),
  // The caller's own organization's notices (an owner's; a member would get 403): no parameter names another.
  listNotifications: (v) => ({ path: `/api/v1/notifications?org_id=${v.orgId}`, expect: [200, 403] }),
};

/**
 * Every attacker of `trio` against every other, on every user route (`aim` picks what of the victim
 * the route is aimed at): nothing of the victim's shows, nothing of theirs changes.
 */
async function expectMatrixHolds(trio: Player[], aim: (v: Player) => Player): Promise<void> {
  const before = await Promise.all(trio.map((p) => snapshot(p)));
  const failures: string[] = [];
  for (const attacker of trio) {
    for (const victim of trio.filter((p) => p !== attacker)) {
      for (const route of userRoutes) {
        const r = foreign[route.id]!(aim(victim));
        const res = await call(r.method ?? route.method, r.path, { key: attacker.key, body: r.body });
        await r.restore?.(attacker);
        const where = `${attacker.userId} -> ${victim.userId} ${route.id} (${res.status})`;
        // An id the attacker sent may come back (e.g. named in a 422); nothing else of the victim's may.
        const sent = `${r.path} ${JSON.stringify(r.body ?? null)}`;
        const leaked = victim.markers.filter((m) => res.text.includes(m) && !sent.includes(m));
        if (leaked.length) failures.push(`${where}: shows ${leaked.join(', ')}`);
        if (res.status >= 500) failures.push(`${where}: ${res.text}`);
        if (r.expect === 404 && res.status !== 404) failures.push(`${where}: expected 404`);
        if (Array.isArray(r.expect) && !r.expect.includes(res.status))
          failures.push(`${where}: expected one of ${r.expect.join(', ')}`);
        if (r.expect === 'null-list' && (res.status !== 200 || !res.body.every((x: unknown) => x === null)))
          failures.push(`${where}: expected only nulls, got ${res.text.slice(0, 200)}`);
        if (r.expect === 'empty-items' && (res.status !== 200 || res.body.items.length !== 0))
          failures.push(`${where}: expected no items`);
        if (r.expect === 'own-only' && res.status >= 400 && res.status !== 409)
          failures.push(`${where}: ${res.text.slice(0, 200)}`);
      }
    }
  }
  expect(failures).toEqual([]);
  // The victims' data is as it was.
  expect(await Promise.all(trio.map((p) => snapshot(p)))).toEqual(before);
}

describe('cross-user matrix: three users, every user route, every foreign id', () => {
  it('has an entry for every user route of the table', () => {
    expect(userRoutes.map((r) => r.id).filter((id) => !foreign[id])).toEqual([]);
  });

  it("never answers with another user's data, and never changes it", async () => {
    const trio = ['alice', 'bob', 'carol'].map((u) => players[u]!);
    await expectMatrixHolds(trio, (v) => v);
  }, 120_000);

  it("scopes conversation ids per user: another user's id neither collides nor shows; one's own again is a 409", async () => {
    const [alice, bob] = [players.alice!, players.bob!];
    // V1: bob starts a conversation with alice's id.
    const mine = await call('POST', '/api/v1/app-conversations', {
      key: bob.key,
      body: { sandbox_id: bob.sandbox.id, conversation_id: alice.conversationId },
    });
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.app_conversation_id).toBe(alice.conversationId);
    expect(mine.text).not.toContain(alice.markers[2]!);
    // Each sees their own under that id; events are separate.
    const [a, b] = (await Promise.all(
      [alice.key, bob.key].map((key) => call('GET', `/api/v1/app-conversations?ids=${alice.conversationId}`, { key })),
    )) as [Answer, Answer];
    expect(a.body[0].title).toBe(alice.markers[2]);
    expect(b.body[0].title).not.toBe(alice.markers[2]);
    expect(b.body[0].created_by_user_id).toBe('bob');
    const bobEvents = await call('GET', `/api/v1/events/search?conversation_id__eq=${alice.conversationId}`, {
      key: bob.key,
    });
    expect(bobEvents.status).toBe(200);
    expect(bobEvents.text).not.toContain('event-of-alice');
    // The sandbox of bob cannot post into alice's conversation through the shared id, only into bob's.
    const ev = {
      kind: 'MessageEvent',
      id: 'ev-bob-shared',
      timestamp: new Date().toISOString(),
      source: 'agent',
      text: 'bob-shared-id-event',
    };
    expect(
      (
        await call('POST', `/api/v1/webhooks/${bob.sandbox.id}/events/${alice.conversationId}?first_seq=1`, {
          key: bob.sandbox.key,
          body: [ev],
        })
      ).status,
    ).toBe(200);
    expect(
      (await call('GET', `/api/v1/events/search?conversation_id__eq=${alice.conversationId}`, { key: alice.key })).text,
    ).not.toContain('bob-shared-id-event');
    expect(
      (await call('GET', `/api/v1/events/search?conversation_id__eq=${alice.conversationId}`, { key: bob.key })).text,
    ).toContain('bob-shared-id-event');
    // Reusing one's own id: 409 (V1 and legacy).
    expect(
      (
        await call('POST', '/api/v1/app-conversations', {
          key: bob.key,
          body: { sandbox_id: bob.sandbox.id, conversation_id: alice.conversationId },
        })
      ).status,
    ).toBe(409);
    const legacyAgain = await call('POST', '/api/conversations', {
      key: alice.key,
      body: { conversation_id: alice.conversationId },
    });
    expect(legacyAgain.status).toBe(409);
    expect(legacyAgain.body.msg_id).toBe('CONVERSATION$ALREADY_EXISTS');
  }, 60_000);
});

/** What a victim's data looks like to its owner: unchanged by any attack. */
async function snapshot(p: Player) {
  const [settings, sandboxes, conversations, task, events] = await Promise.all([
    call('GET', '/api/settings', { key: p.key }),
    call('GET', `/api/v1/sandboxes?id=${p.sandbox.id}`, { key: p.key }),
    call('GET', `/api/v1/app-conversations?ids=${p.conversationId}`, { key: p.key }),
    call('GET', `/api/v1/app-conversations/start-tasks?ids=${p.startTaskId}`, { key: p.key }),
    call('GET', `/api/v1/events/count?conversation_id__eq=${p.conversationId}`, { key: p.key }),
  ]);
  return {
    settings: settings.body,
    sandbox: { id: sandboxes.body[0]?.id, status: sandboxes.body[0]?.status },
    conversation: {
      id: conversations.body[0]?.id,
      title: conversations.body[0]?.title,
      sandbox: conversations.body[0]?.sandbox_id,
    },
    task: { id: task.body[0]?.id, status: task.body[0]?.status },
    events: events.body,
  };
}

describe("organizations: a member and an admin see none of another member's work", () => {
  it('an owner, an admin and a member of one organization: the matrix holds among them', async () => {
    const dave = await newPlayer('dave');
    players.dave = dave;
    players.erin = await newPlayer('erin', { orgId: dave.orgId, role: 'admin' });
    players.frank = await newPlayer('frank', { orgId: dave.orgId, role: 'member' });
    const trio = ['dave', 'erin', 'frank'].map((u) => players[u]!);
    expect(trio.map((p) => p.orgId)).toEqual([dave.orgId, dave.orgId, dave.orgId]);
    // Conversations, sandboxes, settings and keys are per person; the organization routes are aimed at
    // an organization none of them is in (within their own, roles decide: test/integration/signin.test.ts).
    await expectMatrixHolds(trio, (v) => ({ ...v, orgId: players.alice!.orgId }));
  }, 180_000);

  it("a removed member's keys and sessions stop; their conversations stay theirs", async () => {
    const [dave, frank] = [players.dave!, players.frank!];
    const signIn = await call('POST', '/api/authenticate', { key: frank.key });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const asCookie = { headers: { cookie, 'sec-fetch-site': 'same-origin' } };
    expect((await call('GET', '/api/v1/users/me', asCookie)).status).toBe(200);
    const removed = await call('DELETE', `/api/v1/orgs/${dave.orgId}/members/${frank.userId}`, { key: dave.key });
    expect(removed.status, removed.text).toBe(200);
    expect((await call('GET', '/api/v1/users/me', { key: frank.key })).status).toBe(401);
    expect((await call('GET', '/api/v1/users/me', asCookie)).status).toBe(401);
    // A key made afterwards (by the CLI) works, in the new personal organization, and the conversation is still theirs.
    const fresh = await world.newUser('frank');
    const me = await call('GET', '/api/v1/users/me', { key: fresh });
    expect(me.body).toMatchObject({ org_id: removed.body.new_org_id, role: 'owner' });
    const own = await call('GET', `/api/v1/app-conversations?ids=${frank.conversationId}`, { key: fresh });
    expect(own.body[0]?.id).toBe(frank.conversationId);
    // The sandbox was paused (workspace kept).
    const sandbox = await call('GET', `/api/v1/sandboxes?id=${frank.sandbox.id}`, { key: fresh });
    expect(sandbox.body[0]?.status).toBe('PAUSED');
    players.frank = { ...frank, key: fresh, orgId: removed.body.new_org_id };
  }, 60_000);
});

describe('sandbox-credential misuse', () => {
  const bridgeCalls = (sandboxId: string, conversationId: string): [string, string, unknown?][] => [
    ['POST', `/api/v1/sandboxes/${sandboxId}/bridge/check-in`, { version: 'x' }],
    ['POST', `/api/v1/sandboxes/${sandboxId}/bridge/heartbeat`, { active: true }],
    ['GET', `/api/v1/sandboxes/${sandboxId}/bridge/commands?wait=0`],
    ['POST', `/api/v1/sandboxes/${sandboxId}/bridge/commands/1/ack`],
    [
      'POST',
      `/api/v1/sandboxes/${sandboxId}/bridge/commands/1/reply`,
      { request_id: '0'.repeat(32), conversation_id: conversationId, result: { error: 'not_found' } },
    ],
    ['POST', `/api/v1/sandboxes/${sandboxId}/bridge/snapshots`],
    [
      'POST',
      `/api/v1/sandboxes/${sandboxId}/bridge/snapshots/complete`,
      { key: `sandboxes/${sandboxId}/0000000000000-0000000000000000.tar.gz` },
    ],
    ['GET', `/api/v1/sandboxes/${sandboxId}/bridge/snapshots/current`],
    [
      'POST',
      `/api/v1/webhooks/${sandboxId}/events/${conversationId}?first_seq=1`,
      [{ kind: 'MessageEvent', id: 'intruder', timestamp: new Date().toISOString(), source: 'agent' }],
    ],
    [
      'POST',
      `/api/v1/webhooks/${sandboxId}/conversations`,
      { conversation_id: conversationId, execution_status: 'error', title: 'hijacked' },
    ],
    ['GET', `/api/v1/webhooks/${sandboxId}/conversations/${conversationId}/start-config`],
  ];

  it('covers every sandbox route', () => {
    const covered = bridgeCalls('S', 'C').map(([m, p]) => `${m} ${p.split('?')[0]}`);
    for (const r of sandboxRoutes) {
      const shape = r.path.replace('{sandbox_id}', 'S').replace('{conversation_id}', 'C').replace('{seq}', '1');
      expect(covered, r.id).toContain(`${r.method} ${shape}`);
    }
  });

  it("a sandbox's key opens nothing of another sandbox, another user's conversation or any user route", async () => {
    const [alice, bob] = [players.alice!, players.bob!];
    const failures: string[] = [];
    const expect401 = async (what: string, method: string, path: string, key: string, body?: unknown) => {
      const res = await call(method, path, { key, body, holdsSecrets: false });
      if (res.status !== 401) failures.push(`${what}: ${method} ${path} -> ${res.status} ${res.text.slice(0, 200)}`);
    };
    for (const [method, path, body] of bridgeCalls(bob.sandbox.id, bob.conversationId))
      await expect401("alice's sandbox key on bob's sandbox", method, path, alice.sandbox.key, body);
    // Alice's own sandbox id with bob's conversation: (alice, bob's id) is no conversation on alice's sandbox.
    for (const [method, path, body] of bridgeCalls(alice.sandbox.id, bob.conversationId).filter(([, p]) =>
      p.includes('/webhooks/'),
    ))
      await expect401("alice's sandbox on bob's conversation", method, path, alice.sandbox.key, body);
    for (const route of userRoutes) {
      const r = foreign[route.id]!(alice);
      await expect401('a sandbox key on a user route', r.method ?? route.method, r.path, alice.sandbox.key, r.body);
    }
    // A user's API key is no sandbox credential, not even for the user's own sandbox.
    for (const [method, path, body] of bridgeCalls(alice.sandbox.id, alice.conversationId))
      await expect401("alice's API key on her sandbox's routes", method, path, alice.key, body);
    expect(failures).toEqual([]);
  }, 60_000);

  it('an enrollment token works once, for its own sandbox, and for nothing else', async () => {
    const [alice, bob] = [players.alice!, players.bob!];
    const failures: string[] = [];
    for (const [who, token, sandboxId, conversationId] of [
      ['reused', alice.sandbox.enrollment, alice.sandbox.id, alice.conversationId],
      ["on bob's sandbox", alice.sandbox.enrollment, bob.sandbox.id, bob.conversationId],
    ] as const) {
      for (const [method, path, body] of bridgeCalls(sandboxId, conversationId)) {
        const res = await call(method, path, { key: token, body });
        if (res.status !== 401) failures.push(`${who}: ${method} ${path} -> ${res.status}`);
      }
    }
    for (const route of userRoutes.slice(0, 5)) {
      const r = foreign[route.id]!(alice);
      const res = await call(r.method ?? route.method, r.path, { key: alice.sandbox.enrollment, body: r.body });
      if (res.status !== 401) failures.push(`enrollment token on ${route.id} -> ${res.status}`);
    }
    // A fresh sandbox's token, not yet used, still cannot check in to another sandbox.
    const started = await call('POST', '/api/v1/sandboxes?sandbox_spec_id=spy', { key: bob.key });
    const fresh = await waitFor(
      'the fresh enrollment token',
      async () => {
        try {
          return readFileSync(join(world.dataDir, 'sandboxes', started.body.id, 'workspace', '.enrollment'), 'utf8');
        } catch {
          return '';
        }
      },
      { until: (t) => t.length > 0, timeoutMs: 20_000 },
    );
    if (
      (await call('POST', `/api/v1/sandboxes/${alice.sandbox.id}/bridge/check-in`, { key: fresh, body: {} })).status !==
      401
    )
      failures.push("bob's fresh token checked in to alice's sandbox");
    // A deleted sandbox's session key is dead.
    const gone = await world.spySandbox(bob.key);
    expect((await call('DELETE', `/api/v1/sandboxes/${gone.id}`, { key: bob.key })).status).toBe(200);
    const after = await call('POST', `/api/v1/sandboxes/${gone.id}/bridge/heartbeat`, { key: gone.key, body: {} });
    if (after.status !== 401) failures.push(`a deleted sandbox's key -> ${after.status}`);
    expect(failures).toEqual([]);
  }, 60_000);
});

describe('conversation-scoped key misuse', () => {
  const keyOf = async (p: Player, conversationId: string): Promise<string> =>
    (await call('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key: p.key })).body[0].session_api_key;
  const count = (id: string) => `/api/v1/events/count?conversation_id__eq=${id}`;

  it("a conversation's key opens its own conversation's routes and nothing else", async () => {
    const [alice, bob] = [players.alice!, players.bob!];
    const scoped = await keyOf(alice, alice.conversationId);
    expect(scoped).toMatch(/^acsc\./);
    // Its own routes work (the control that makes the refusals below mean something).
    expect((await call('GET', count(alice.conversationId), { key: scoped })).status).toBe(200);
    expect(
      (await call('GET', `/api/v1/events/search?conversation_id__eq=${alice.conversationId}`, { key: scoped })).status,
    ).toBe(200);
    const failures: string[] = [];
    const refused = async (what: string, method: string, path: string, allowed: number[], body?: unknown) => {
      const res = await call(method, path, { key: scoped, body });
      if (!allowed.includes(res.status))
        failures.push(`${what}: ${method} ${path} -> ${res.status} ${res.text.slice(0, 200)}`);
    };
    // Another conversation of the same user, and another user's conversation (same relay and event routes).
    for (const [who, id] of [
      ["alice's other conversation", alice.legacyConversationId],
      ["bob's conversation", bob.conversationId],
    ] as const) {
      await refused(who, 'GET', count(id), [403, 404]);
      await refused(who, 'GET', `/api/v1/events/search?conversation_id__eq=${id}`, [403, 404]);
      await refused(who, 'POST', `/api/conversations/${id}/pause`, [403, 404]);
      // The agent server's surface and the conversation itself, which a conversation key may read and rename: its own only.
      await refused(who, 'GET', `/api/conversations/${id}`, [403, 404]);
      await refused(who, 'PATCH', `/api/conversations/${id}`, [403, 404], { title: 'hijacked' });
      for (const tail of ['events/search', 'events/count', 'events/x', 'agent_final_response'])
        await refused(who, 'GET', `/api/conversations/${id}/${tail}`, [403, 404]);
      await refused(who, 'POST', `/api/conversations/${id}/interrupt`, [403, 404]);
      // Agent Canvas's and the late-2025 UI's conversation reads.
      await refused(who, 'GET', `/api/v1/conversation/${id}/events/search`, [403, 404]);
      await refused(who, 'GET', `/api/v1/app-conversations/${id}/skills`, [403, 404]);
      await refused(who, 'GET', `/api/conversations/${id}/config`, [403, 404]);
      // Its workspace: Canvas's reads and the agent server's git routes naming another conversation.
      await refused(who, 'GET', `/api/v1/app-conversations/${id}/files`, [403, 404]);
      await refused(who, 'GET', `/api/v1/app-conversations/${id}/file?file_path=a.txt`, [403, 404]);
      await refused(who, 'GET', `/api/git/changes/repo?conversation_id=${id}`, [403, 404]);
      await refused(who, 'POST', `/api/conversations/${id}/events`, [403, 404], {
        content: [{ type: 'text', text: 'hi' }],
      });
    }
    // The agent server's reads that name no conversation (declared 'own'): the key's own conversation only.
    const search = await call('GET', '/api/conversations/search', { key: scoped });
    expect(search.body.items.map((c: { id: string }) => c.id)).toEqual([alice.conversationId]);
    expect((await call('GET', '/api/conversations/count', { key: scoped })).body).toBe(1);
    const batch = await call(
      'GET',
      `/api/conversations?ids=${alice.conversationId}&ids=${alice.legacyConversationId}&ids=${bob.conversationId}`,
      { key: scoped },
    );
    expect(batch.body.map((c: { id: string } | null) => c?.id ?? null)).toEqual([alice.conversationId, null, null]);
    expect((await call('GET', '/api/conversations', { key: scoped })).status).toBe(422); // the owner's list: only by ids
    const view = await call('GET', '/api/settings', { key: scoped });
    expect(view.status).toBe(200);
    expect(Object.keys(view.body).sort()).toEqual([
      'agent',
      'agent_settings',
      'confirmation_mode',
      'conversation_settings',
      'llm_model',
      'misc_settings',
    ]);
    // Every user route that does not take a conversation key, aimed at the key owner's own resources.
    for (const route of userRoutes.filter((r) => !r.conversationKey)) {
      const r = foreign[route.id]!(alice);
      await refused(`user route ${route.id}`, r.method ?? route.method, r.path, [403], r.body);
    }
    // Sandbox routes take only the sandbox's own credentials.
    await refused('the bridge', 'POST', `/api/v1/sandboxes/${alice.sandbox.id}/bridge/heartbeat`, [401], {
      active: true,
    });
    await refused(
      'a bridge route',
      'POST',
      `/api/v1/webhooks/${alice.sandbox.id}/events/${alice.conversationId}`,
      [401],
      [],
    );
    expect(failures).toEqual([]);
  }, 60_000);

  it('is dead after revocation (the new one works) and after the conversation is deleted', async () => {
    const carol = players.carol!;
    const before = await keyOf(carol, carol.conversationId);
    const revoked = await call('POST', `/api/v1/app-conversations/${carol.conversationId}/session-api-key/revoke`, {
      key: carol.key,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.session_api_key).not.toBe(before);
    expect((await call('GET', count(carol.conversationId), { key: before })).status).toBe(401);
    expect((await call('POST', `/api/conversations/${carol.conversationId}/pause`, { key: before })).status).toBe(401);
    expect((await call('GET', count(carol.conversationId), { key: revoked.body.session_api_key })).status).toBe(200);
    // Delete: the legacy conversation's key (as the legacy GET shows it) stops working with it.
    const legacyKey: string = (
      await call('GET', `/api/conversations/${carol.legacyConversationId}`, { key: carol.key })
    ).body.session_api_key;
    expect((await call('GET', count(carol.legacyConversationId), { key: legacyKey })).status).toBe(200);
    expect((await call('DELETE', `/api/conversations/${carol.legacyConversationId}`, { key: carol.key })).status).toBe(
      200,
    );
    expect((await call('GET', count(carol.legacyConversationId), { key: legacyKey })).status).toBe(401);
    expect((await call('GET', `/api/conversations/${carol.legacyConversationId}`, { key: carol.key })).status).toBe(
      404,
    );
  }, 60_000);
});

/** What a hostile agent runs in its sandbox against the development OpenID provider (a module for `node -e`). */
const tokenThief = (base: string, passwordFile: string) => `
const out = (k, v) => console.log("THIEF " + k + " " + JSON.stringify(v));
const fs = await import("node:fs");
try { out("read", fs.readFileSync(${JSON.stringify(passwordFile)}, "utf8")); } catch (e) { out("noread", e.code); }
const jar = new Map();
const keep = (r) => { for (const c of r.headers.getSetCookie()) { const p = c.split(";")[0]; const i = p.indexOf("="); jar.set(p.slice(0, i), p.slice(i + 1)); } };
const cookie = () => [...jar].map(([k, v]) => k + "=" + v).join("; ");
const doc = await (await fetch(${JSON.stringify(`${base}/oidc/.well-known/openid-configuration`)})).json();
const auth = new URL(doc.authorization_endpoint);
for (const [k, v] of Object.entries({ client_id: "acs-console", redirect_uri: ${JSON.stringify(`${base}/auth/callback`)}, response_type: "code", scope: "openid email", state: "s", nonce: "n", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM", code_challenge_method: "S256" })) auth.searchParams.set(k, v);
let r = await fetch(auth, { redirect: "manual" }); keep(r);
const interaction = new URL(r.headers.get("location"), auth);
r = await fetch(interaction, { headers: { cookie: cookie() } }); keep(r);
for (const guess of ["password", "dev", "admin", "acs"]) {
  const login = await fetch(interaction.href + "/login", { method: "POST", redirect: "manual", headers: { cookie: cookie(), "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ email: "agent@example.com", password: guess }) });
  out("login", login.status + " " + (login.headers.get("location") ?? ""));
}
for (const grant of [{ grant_type: "client_credentials" }, { grant_type: "password", username: "agent@example.com", password: "x" }, { grant_type: "authorization_code", code: "forged", code_verifier: "v".repeat(43), redirect_uri: ${JSON.stringify(`${base}/auth/callback`)} }]) {
  const t = await fetch(doc.token_endpoint, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: "acs-console", ...grant }) });
  out("token", t.status + " " + (await t.text()).slice(0, 120));
}
`;

describe('the development OpenID provider against a hostile agent', () => {
  it('an agent in its sandbox can neither read the sign-in password nor get a token from the provider', async () => {
    const alice = players.alice!;
    const passwordFile = join(world.dataDir, 'dev-signin-password');
    const password = readFileSync(passwordFile, 'utf8').trim();
    const agent = await call('POST', `/api/v1/sandboxes?sandbox_spec_id=${encodeURIComponent(world.agentSpecId)}`, {
      key: alice.key,
    });
    expect(agent.status, agent.text).toBe(200);
    const script = Buffer.from(tokenThief(world.server.url, passwordFile)).toString('base64');
    llm.enqueue(reply.bash(`node --input-type=module -e "$(echo ${script} | base64 -d)" 2>&1`), reply.finish('done'));
    const started = await call('POST', '/api/v1/app-conversations', {
      key: alice.key,
      body: { sandbox_id: agent.body.id, initial_message: { content: [{ type: 'text', text: 'get me a token' }] } },
    });
    expect(started.status, started.text).toBe(200);
    const cid = started.body.app_conversation_id;
    await waitFor(
      'the agent to finish',
      async () =>
        (await call('GET', `/api/v1/app-conversations?ids=${cid}`, { key: alice.key })).body[0]?.execution_status,
      { until: (s) => s === 'finished' || s === 'error', timeoutMs: 90_000 },
    );
    const events = await call('GET', `/api/v1/events/search?conversation_id__eq=${cid}&limit=100`, { key: alice.key });
    // The script ran (its lines are there): the data dir is out of the sandbox's sight, every guess refused.
    expect(events.text).toContain('THIEF noread');
    expect(events.text).not.toContain('THIEF read');
    // (each line shows in the observation more than once)
    const statuses = (what: string) =>
      [...events.text.matchAll(new RegExp(`THIEF ${what} \\\\"(\\d+)`, 'g'))].map((m) => m[1]);
    expect(statuses('login').length).toBeGreaterThanOrEqual(4);
    expect(new Set(statuses('login'))).toEqual(new Set(['401']));
    expect(statuses('token').length).toBeGreaterThanOrEqual(3);
    expect(new Set(statuses('token'))).toEqual(new Set(['400']));
    expect(events.text).not.toMatch(/id_token|access_token|[?&]code=/);
    expect(events.text).not.toContain(password);
  }, 120_000);
});

// Last but the sweep: its POST /api/authenticate calls come from the same address as every other test's,
// and are held to 20 a minute per address (shared/auth/rate-limit.ts); the sweep reads what it saw.
describe('fuzz over every route', () => {
  it(`answers ${FUZZ_REQUESTS} hostile requests without one 5xx`, async () => {
    const mallory = await newPlayer('mallory');
    const knownIds = Object.values(players).flatMap((p) => [p.sandbox.id, p.conversationId, p.startTaskId]);
    const result = await runFuzz(
      {
        baseUrl: world.server.url,
        userKey: mallory.key,
        sandbox: { id: mallory.sandbox.id, key: mallory.sandbox.key },
        knownIds: [...knownIds, mallory.conversationId, mallory.startTaskId],
      },
      {
        requests: FUZZ_REQUESTS,
        concurrency: 16,
        seed: FUZZ_SEED,
        // The fuzz holds mallory's sandbox key, so it may fetch that sandbox's start configuration: the one answer that rightly holds secrets.
        onResponse: (res, body) => {
          if (!(res.ok && new URL(res.url).pathname.endsWith('/start-config')))
            world.client.seen.add(responseText(res, body));
        },
      },
    );
    console.log(
      `fuzz seed ${FUZZ_SEED}: ${result.sent} answers, statuses ${JSON.stringify(result.byStatus)}, ${result.transportErrors.length} transport errors`,
    );
    // The spy program takes no command, so a workspace read of mallory's own conversation waits for a
    // reply that never comes: the documented 504 after 10 s (docs/architecture.md, "Workspace reads").
    const errors = result.serverErrors.filter(
      (e) => !(e.status === 504 && e.body.includes('did not answer the workspace read')),
    );
    expect(errors, `seed ${FUZZ_SEED}`).toEqual([]);
    expect(result.sent).toBeGreaterThanOrEqual(FUZZ_REQUESTS * 0.99);
    // A few requests fetch cannot put on the wire (e.g. a header value it refuses): never more than a handful.
    expect(result.transportErrors.length, JSON.stringify(result.transportErrors.slice(0, 5))).toBeLessThanOrEqual(
      FUZZ_REQUESTS * 0.01,
    );
    players.mallory = mallory;
  }, 300_000);
});

describe('secrets sweep', () => {
  it('the agent cannot make a secret reach its events, in any form', async () => {
    const alice = players.alice!;
    const agent = await call('POST', `/api/v1/sandboxes?sandbox_spec_id=${encodeURIComponent(world.agentSpecId)}`, {
      key: alice.key,
    });
    expect(agent.status, agent.text).toBe(200);
    llm.enqueue(
      reply.bash(
        'echo "$PLANT_CUSTOM"; printf %s "$PLANT_CUSTOM" | base64 -w0; echo; printf %s "oauth2:$PLANT_CUSTOM" | base64 -w0; echo; ' +
          'node -e "console.log(encodeURIComponent(process.env.PLANT_CUSTOM), process.env.PLANT_OTHER)"; env | grep PLANT_',
      ),
      reply.tool('reverse_text', { text: 'settings-server' }),
      reply.tool('conv_reverse_text', { text: 'conversation-server' }),
      reply.finish('done'),
    );
    const upstreamBefore = llm.requests.length;
    const started = await call('POST', '/api/v1/app-conversations', {
      key: alice.key,
      body: {
        sandbox_id: agent.body.id,
        // Through the gateway: the agent holds a credential, the model gets the platform's key.
        llm_model: PLATFORM_MODEL,
        mcp_config: plantedMcp('alice', 'agent'),
        initial_message: { content: [{ type: 'text', text: 'show me the secrets' }] },
      },
    });
    expect(started.status, started.text).toBe(200);
    const cid = started.body.app_conversation_id;
    await waitFor(
      'the agent to finish',
      async () =>
        (await call('GET', `/api/v1/app-conversations?ids=${cid}`, { key: alice.key })).body[0]?.execution_status,
      { until: (s) => s === 'finished' || s === 'error', timeoutMs: 90_000 },
    );
    const events = await call('GET', `/api/v1/events/search?conversation_id__eq=${cid}&limit=100`, { key: alice.key });
    // The commands and tools did run: their outputs are there, with the secrets masked.
    expect(events.text).toContain('PLANT_CUSTOM=');
    expect(events.text).toContain('revres-sgnittes');
    expect(events.text).toContain('revres-noitasrevnoc');
    expect(events.text).toContain('secret hidden');
    expect(findLeaks(events.text, secrets)).toEqual([]);
    // Each of the agent's four model calls went through the gateway, which sent the platform key upstream.
    expect(llm.requests.slice(upstreamBefore).map((r) => [r.body.model, r.headers.authorization])).toEqual(
      Array(4).fill(['scripted-upstream', `Bearer ${platformKeys.PLATFORM_OPENAI_API_KEY}`]),
    );
  }, 120_000);

  it('no response body, log line, stored start task or audit entry of the whole suite holds a planted secret', async () => {
    expect(Object.keys(secrets).length).toBeGreaterThan(40);
    // Every player reads their organization's audit log (all own theirs but the admin erin): those answers join the sweep.
    let logEntries = 0;
    for (const p of Object.values(players)) {
      const log = await call('GET', '/api/v1/audit-log?limit=100', { key: p.key });
      expect(log.status, `${p.userId}: ${log.text}`).toBe(200);
      logEntries += log.body.items.length;
    }
    expect(logEntries).toBeGreaterThan(10);
    const responses = [...world.client.seen].join('\n');
    expect(world.client.seen.size).toBeGreaterThan(100);
    // The sweep sees what it looks for: the start configuration a sandbox rightly gets holds them.
    expect(findLeaks(startConfigSeen.join('\n'), secrets).length).toBeGreaterThan(10);
    // ...but never the platform's keys: a sandbox gets a gateway credential instead (docs/platform-llms.md),
    // which the sweep checks like the planted ones (carol's platform model: the check has one to find).
    const configs = startConfigSeen.join('\n');
    expect(findLeaks(configs, platformKeys)).toEqual([]);
    expect(gatewayCredentials(configs).length).toBeGreaterThan(0);
    expect(configs).toContain(`"base_url":"${world.server.url}/llm/v1"`);
    expect(Object.values(secrets)).toEqual(expect.arrayContaining(gatewayCredentials(configs)));
    const logs = world.server.output();
    const db = readEndpointFile(world.dataDir)!;
    useLocalTables(db.endpoint, 'acs', db.eventsEndpoint);
    const tasks = await documentClient().send(new ScanCommand({ TableName: tableName('startTasks') }));
    const stored = JSON.stringify(tasks.Items);
    expect(tasks.Items!.length).toBeGreaterThanOrEqual(6);
    expect(stored).toContain('api_key_set');
    const audit = await documentClient().send(new ScanCommand({ TableName: tableName('auditLog') }));
    const entries = JSON.stringify(audit.Items);
    // The settings saves with their planted secrets were recorded, by name.
    expect(entries).toContain('secret_set');
    expect(entries).toContain('llm_api_key');
    expect({
      responses: findLeaks(responses, secrets),
      logs: findLeaks(logs, secrets),
      startTasks: findLeaks(stored, secrets),
      auditLog: findLeaks(entries, secrets),
    }).toEqual({ responses: [], logs: [], startTasks: [], auditLog: [] });
  }, 60_000);
});
