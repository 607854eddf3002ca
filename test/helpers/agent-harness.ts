import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { agentEventBatchSchema, type AgentEvent, type EventOf } from '#sandbox/agent/events.ts';
import { AgentSession, type AgentSessionOptions } from '#sandbox/agent/session.ts';
import { startScriptedLlm, type ScriptedLlm, type ScriptStep } from '#test/helpers/scripted-llm.ts';

/** A started AgentSession against a scripted LLM on loopback, collecting its events; cleaned up after each test. */
export const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface Harness {
  session: AgentSession;
  events: AgentEvent[];
  workspaceDir: string;
  llm: ScriptedLlm;
  kinds(): string[];
  of<K extends AgentEvent['kind']>(kind: K): EventOf<K>[];
  statuses(): unknown[];
}

/** A started session against a scripted LLM, collecting its events (each batch checked against the schema). */
export async function harness(
  steps: ScriptStep[],
  overrides: Partial<AgentSessionOptions> & { llmOptions?: Partial<AgentSessionOptions['llm']> } = {},
): Promise<Harness> {
  const { llmOptions, ...rest } = overrides;
  const llm = await startScriptedLlm(steps);
  const workspaceDir = mkdtempSync(join(tmpdir(), 'agent-ws-'));
  const events: AgentEvent[] = [];
  const session = new AgentSession({
    conversationId: 'c0ffee',
    workspaceDir,
    llm: { model: 'scripted-model', apiKey: 'sk-test-key', baseUrl: llm.baseUrl, maxRetries: 0, ...llmOptions },
    emit: async (batch) => {
      events.push(...agentEventBatchSchema.parse(batch));
    },
    ...rest,
  });
  cleanups.push(async () => {
    await session.close();
    await llm.close();
    rmSync(workspaceDir, { recursive: true, force: true });
  });
  await session.start();
  const of = <K extends AgentEvent['kind']>(kind: K) => events.filter((e): e is EventOf<K> => e.kind === kind);
  return {
    session,
    events,
    workspaceDir,
    llm,
    of,
    kinds: () =>
      events
        .filter((e) => !(e.kind === 'ConversationStateUpdateEvent' && e.key === 'metrics'))
        .map((e) => (e.kind === 'ConversationStateUpdateEvent' ? `status:${e.value}` : e.kind)),
    statuses: () =>
      of('ConversationStateUpdateEvent')
        .filter((e) => e.key === 'execution_status')
        .map((e) => e.value),
  };
}

export const say = (text: string, run = true) => ({ content: [{ type: 'text' as const, text }], run });

export const observationText = (e: EventOf<'ObservationEvent'>) =>
  ((e.observation.content as { text: string }[]) ?? []).map((c) => c.text).join('');
