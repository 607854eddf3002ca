import type { Answer } from '#shared/client/index.ts';
import type { AppConversation } from '#shared/conversations/model.ts';
import type { TierStack } from '#test/tier/stack.ts';
import { WaitTimeout, waitFor } from '#test/helpers/wait.ts';

/**
 * The seed's flows, driven through the tier's HTTP API. Each throws a TierFailure naming the step,
 * with what the functions behind it logged, so a test (or a mutation case) can tell which step broke.
 */

export class TierFailure extends Error {}

const fail = (tier: TierStack, step: string, detail: unknown): never => {
  throw new TierFailure(`${step}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}\n${tier.explain()}`);
};

/** The answer's body once its status is the one expected; `T` names the answer's type where the caller reads it. */
async function expectOk<T = unknown>(
  tier: TierStack,
  step: string,
  res: Promise<{ status: number; body: any; text: string }>,
  status = 200,
): Promise<T> {
  const r = await res;
  if (r.status !== status) fail(tier, step, `HTTP ${r.status} ${r.text.slice(0, 500)}`);
  return r.body as T;
}

/** The settings' own answer (the route also answers a Canvas-shaped view, not asked for here). */
type Settings = Extract<Answer<'/api/settings', 'get'>, { llm_api_key_set: boolean }>;
type Sandbox = NonNullable<Answer<'/api/v1/sandboxes', 'get'>[number]>;
type StartTask = NonNullable<Answer<'/api/v1/app-conversations/start-tasks', 'get'>[number]>;
/** The fields of an ECS task state change the flows read. */
const ecsDetail = (event: unknown) => (event as { detail?: { startedBy?: string; lastStatus?: string } }).detail ?? {};
type Event = Answer<'/api/v1/events/search', 'get'>['items'][number];

/**
 * The tests' one poller (`waitFor`) for a step of a flow: on timeout it fails as a TierFailure, with
 * what the functions behind the step logged.
 */
export async function until<T>(
  tier: TierStack,
  step: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  try {
    return (await waitFor(step, read, { until: done, timeoutMs, intervalMs: 200 })) as T;
  } catch (err) {
    if (err instanceof WaitTimeout) fail(tier, `${step} (timed out)`, err.last);
    throw err;
  }
}

/**
 * A user's API key, made as docs/deploy.md says (the keys CLI with --aws, against the tier's DynamoDB);
 * with `org`, the new user joins that organization as a member.
 */
export async function createKey(tier: TierStack, user: string, org?: string): Promise<string> {
  const out = await tier.keys(['create', '--user', user, ...(org ? ['--org', org] : [])]);
  const key = out.stdout.trim().split('\n').pop() ?? '';
  if (out.code !== 0 || !key.startsWith('acs_'))
    fail(tier, 'keys create --aws', `exit ${out.code}: ${out.stderr.slice(-1000)}`);
  return key;
}

/** Saves settings (a first save, then LLM settings with a secret: the write without a read), reads them back masked. */
export async function settingsRoundTrip(tier: TierStack, key: string, llmBaseUrl: string): Promise<Settings> {
  const body = { llm_model: 'openai/scripted-model', llm_api_key: 'sk-tier-secret-123', llm_base_url: llmBaseUrl };
  await expectOk(
    tier,
    'POST /api/settings',
    tier.call('POST', '/api/settings', { key, body: { git_user_name: 'Tier Tester' } }),
  );
  await expectOk(tier, 'POST /api/settings', tier.call('POST', '/api/settings', { key, body }));
  const got = await expectOk<Settings>(tier, 'GET /api/settings', tier.call('GET', '/api/settings', { key }));
  if (
    got.llm_base_url !== llmBaseUrl ||
    got.llm_api_key_set !== true ||
    JSON.stringify(got).includes('sk-tier-secret-123')
  )
    fail(tier, 'GET /api/settings', got);
  const me = await expectOk<Answer<'/api/v1/users/me', 'get'>>(
    tier,
    'GET /api/v1/users/me',
    tier.call('GET', '/api/v1/users/me', { key }),
  );
  if (me.settings?.llm_model !== body.llm_model) fail(tier, 'GET /api/v1/users/me', me);
  return got;
}

/** A GET that must answer 200: a poll fails at once on an error instead of waiting out its time. */
const getOk = <T>(tier: TierStack, key: string, path: string) =>
  expectOk<T>(tier, `GET ${path.split('?')[0]}`, tier.call('GET', path, { key }));

export const sandboxOf = async (tier: TierStack, key: string, id: string) =>
  (await getOk<(Sandbox | null)[]>(tier, key, `/api/v1/sandboxes?id=${id}`))[0] ?? null;

/** Starts a sandbox and waits until its program has checked in over the bridge (RUNNING). */
export async function startSandbox(tier: TierStack, key: string): Promise<Sandbox> {
  const started = await expectOk<Sandbox>(
    tier,
    'POST /api/v1/sandboxes',
    tier.call('POST', '/api/v1/sandboxes', { key }),
  );
  const sb = await until(
    tier,
    `sandbox ${started.id} RUNNING`,
    () => sandboxOf(tier, key, started.id),
    (s) => s?.status === 'RUNNING' || s?.status === 'ERROR',
  );
  if (sb?.status !== 'RUNNING') fail(tier, `sandbox ${started.id} start`, sb);
  return sb!;
}

/**
 * Pause (StopTask; the program saves its workspace to S3 after SIGTERM; ECS's STOPPED event through
 * the rule), resume (a new task checks in and restores it), delete (the tasks stop, then the
 * snapshots and the record go). `hooks` look at the workspace between the steps.
 */
export async function pauseResumeDelete(
  tier: TierStack,
  key: string,
  id: string,
  hooks: { paused?: () => Promise<void>; resumed?: () => Promise<void> } = {},
): Promise<void> {
  const delivered = () =>
    tier.bus.deliveries.filter(
      (d) =>
        d.target.includes('ecsEvents') &&
        ecsDetail(d.event).startedBy === id &&
        ecsDetail(d.event).lastStatus === 'STOPPED',
    );
  await expectOk(tier, 'pause', tier.call('POST', `/api/v1/sandboxes/${id}/pause`, { key }));
  await until(
    tier,
    'STOPPED event delivered to ecsEvents',
    async () => delivered().length,
    (n) => n >= 1,
  );
  await tier.bus.settle();
  const paused = await sandboxOf(tier, key, id);
  if (paused?.status !== 'PAUSED') fail(tier, 'paused', paused);
  await hooks.paused?.();
  await expectOk(tier, 'resume', tier.call('POST', `/api/v1/sandboxes/${id}/resume`, { key }));
  const resumed = await until(
    tier,
    'resumed RUNNING',
    () => sandboxOf(tier, key, id),
    (s) => s?.status === 'RUNNING' || s?.status === 'ERROR',
  );
  if (resumed?.status !== 'RUNNING') fail(tier, 'resume', resumed);
  await hooks.resumed?.();
  await expectOk(tier, 'delete', tier.call('DELETE', `/api/v1/sandboxes/${id}`, { key }));
  if ((await sandboxOf(tier, key, id)) !== null)
    fail(tier, 'deleted sandbox still listed', await sandboxOf(tier, key, id));
  // The task stops; its STOPPED event finishes the delete (snapshots, then the record).
  await until(
    tier,
    'tasks stopped',
    async () => [...tier.aws.tasks.values()].filter((t) => t.startedBy === id && t.lastStatus !== 'STOPPED').length,
    (n) => n === 0,
  );
  await tier.bus.settle();
  await until(
    tier,
    'snapshots removed',
    async () => tier.aws.objectKeys(`sandboxes/${id}/`).length,
    (n) => n === 0,
  );
  const failed = tier.bus.failures.filter((d) => ecsDetail(d.event).startedBy === id);
  if (failed.length)
    fail(
      tier,
      'ECS event deliveries failed',
      failed.map((d) => d.result.error),
    );
}

const text = (t: string) => ({ role: 'user', content: [{ type: 'text', text: t }], run: true });

/** V1: POST /api/v1/app-conversations, the start task READY, the agent runs and its events are searchable. */
export async function startConversationV1(
  tier: TierStack,
  key: string,
  message: string,
): Promise<{ conversationId: string; events: Event[] }> {
  const task = await expectOk<Answer<'/api/v1/app-conversations', 'post'>>(
    tier,
    'POST /api/v1/app-conversations',
    tier.call('POST', '/api/v1/app-conversations', { key, body: { initial_message: text(message) } }),
  );
  const done = await until(
    tier,
    `start task ${task.id}`,
    async () =>
      (await getOk<(StartTask | null)[]>(tier, key, `/api/v1/app-conversations/start-tasks?ids=${task.id}`))[0],
    (t) => t?.status === 'READY' || t?.status === 'ERROR',
    90_000,
  );
  if (done?.status !== 'READY' || !done.app_conversation_id) return fail(tier, 'start task', done);
  return {
    conversationId: done.app_conversation_id,
    events: await finishedEvents(tier, key, done.app_conversation_id),
  };
}

/** Legacy: POST /api/conversations, then the same agent run. */
export async function startConversationLegacy(
  tier: TierStack,
  key: string,
  message: string,
): Promise<{ conversationId: string; events: Event[] }> {
  const res = await expectOk<Answer<'/api/conversations', 'post'>>(
    tier,
    'POST /api/conversations',
    tier.call('POST', '/api/conversations', { key, body: { initial_user_msg: message } }),
  );
  if (!res.conversation_id) fail(tier, 'POST /api/conversations', res);
  return { conversationId: res.conversation_id, events: await finishedEvents(tier, key, res.conversation_id) };
}

async function finishedEvents(tier: TierStack, key: string, id: string): Promise<Event[]> {
  const conv = await until(
    tier,
    `conversation ${id} finished`,
    async () => (await getOk<(AppConversation | null)[]>(tier, key, `/api/v1/app-conversations?ids=${id}`))[0],
    (c) => ['finished', 'error', 'stuck'].includes(c?.execution_status ?? ''),
    90_000,
  );
  if (conv?.execution_status !== 'finished') fail(tier, `conversation ${id}`, conv);
  const search = await expectOk<Answer<'/api/v1/events/search', 'get'>>(
    tier,
    'GET /api/v1/events/search',
    tier.call('GET', `/api/v1/events/search?conversation_id__eq=${id}&limit=100`, { key }),
  );
  const count = await expectOk<number>(
    tier,
    'GET /api/v1/events/count',
    tier.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key }),
  );
  if (count !== search.items.length) fail(tier, 'events count', { count, items: search.items.length });
  return search.items;
}
