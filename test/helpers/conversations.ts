import type { AppConversation } from '#shared/conversations/model.ts';
import { randomUUID } from 'node:crypto';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { sha256 } from '#shared/sandboxes/lifecycle.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

export interface StartTask {
  id: string;
  status: string;
  detail: string | null;
  app_conversation_id: string;
  sandbox_id: string | null;
}

/** Starts a conversation over HTTP and waits for its start task to finish (READY or ERROR). */
export async function startConversation(stack: TestStack, body: unknown, key?: string): Promise<StartTask> {
  const res = await stack.call('POST', '/api/v1/app-conversations', { body, key });
  if (res.status !== 200) throw new Error(`start: HTTP ${res.status} ${res.text}`);
  const id = (res.body as StartTask).id;
  return waitFor(
    `start task ${id}`,
    async () =>
      ((await stack.call('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body as StartTask[])[0]!,
    { until: (t) => t.status === 'READY' || t.status === 'ERROR', timeoutMs: 90_000 },
  );
}

export interface EventView {
  kind: string;
  id: string;
  source: string;
  [k: string]: any;
}

/** Every event of a conversation, following page cursors. */
export async function allEvents(stack: TestStack, conversationId: string, key?: string): Promise<EventView[]> {
  const out: EventView[] = [];
  let page: string | null = null;
  do {
    const res: { status: number; body: any } = await stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${conversationId}&limit=100${page ? `&page_id=${encodeURIComponent(page)}` : ''}`,
      { key },
    );
    if (res.status !== 200) throw new Error(`events: HTTP ${res.status}`);
    out.push(...res.body.items);
    page = res.body.next_page_id;
  } while (page);
  return out;
}

/** The conversation as GET /api/v1/app-conversations?ids= shows it. */
export async function conversation(stack: TestStack, id: string, key?: string): Promise<AppConversation | null> {
  const found = (await stack.call('GET', `/api/v1/app-conversations?ids=${id}`, { key }))
    .body as (AppConversation | null)[];
  return found[0] ?? null;
}

/** Waits until the conversation's agent reaches one of `statuses`, and its events include a given kind. */
export async function waitForExecutionStatus(
  stack: TestStack,
  id: string,
  statuses: string[],
  key?: string,
  timeoutMs = 60_000,
): Promise<AppConversation> {
  return waitFor(
    `execution_status in ${statuses.join('|')} of ${id}`,
    async () => (await conversation(stack, id, key)) ?? undefined,
    {
      until: (c) => c !== undefined && statuses.includes(c.execution_status ?? ''),
      timeoutMs: timeoutMs,
    },
  );
}

/** A conversation record of `userId` as a start leaves it (not placed, no title, no status unless `overrides` says). */
export function conversationRecord(userId: string, overrides: Partial<ConversationRecord> = {}): ConversationRecord {
  const at = new Date().toISOString();
  return {
    id: randomUUID().replaceAll('-', ''),
    userId,
    createdAt: at,
    updatedAt: at,
    sandbox_id: null,
    start_task_id: randomUUID(),
    selected_repository: null,
    selected_branch: null,
    git_provider: null,
    title: null,
    trigger: null,
    pr_number: [],
    llm_model: null,
    parent_conversation_id: null,
    agent_type: 'default',
    execution_status: null,
    metrics: null,
    version: 1,
    ...overrides,
  };
}

/** `conversationRecord(userId, overrides)` written straight to the store: for tests that need the record, not an agent. Its id. */
export async function storedConversation(userId: string, overrides: Partial<ConversationRecord> = {}): Promise<string> {
  const record = conversationRecord(userId, overrides);
  if (!(await new DynamoConversationStore().create(record))) throw new Error(`conversation ${record.id} exists`);
  return record.id;
}

/**
 * A RUNNING sandbox record of `userId` written straight to the store, as a start leaves it once its
 * program checked in, with the hash of a session key only the test (the "agent inside") holds: no
 * process or task runs it, so nothing polls or heartbeats. Its id and key.
 */
export async function storedSandbox(
  userId: string,
  overrides: Partial<SandboxRecord> & { key?: string } = {},
): Promise<{ id: string; key: string }> {
  const { key = `sbx_${randomUUID().replaceAll('-', '')}`, ...fields } = overrides;
  const at = new Date().toISOString();
  const record: SandboxRecord = {
    id: `sbx-test-${randomUUID().slice(0, 8)}`,
    userId,
    specId: 'default',
    status: 'RUNNING',
    version: 1,
    generation: 1,
    createdAt: at,
    updatedAt: at,
    lastActivityAt: at,
    sessionKeyHash: sha256(key),
    ...fields,
  };
  await new DynamoSandboxStore().create(record);
  return { id: record.id, key };
}
