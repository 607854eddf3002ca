import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeClient } from '#sandbox/bridge-client.ts';
import { ConversationRunner } from '#sandbox/conversations.ts';
import type { ConversationReport, StartConfig } from '#shared/protocol.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { waitFor } from '#test/helpers/wait.ts';

/*
 * The sandbox's conversation runner against a bridge that holds every events post until released
 * (a slow control plane) and a scripted LLM on loopback: an execution status is reported only after
 * its events were delivered, and the agent does not wait for that delivery before its LLM call.
 */

const cid = 'c'.repeat(32);
let llm: ScriptedLlm;
let workspace: string;

beforeAll(async () => {
  llm = await startScriptedLlm();
  workspace = mkdtempSync(join(tmpdir(), 'acs-runner-'));
});

afterAll(async () => {
  await llm?.close();
  rmSync(workspace, { recursive: true, force: true });
});

describe('the sandbox conversation runner', () => {
  it("reports a status after its events' delivery, without holding the agent's LLM call on that delivery", async () => {
    const config: StartConfig = {
      conversation_id: cid,
      start_task_id: 't'.repeat(32),
      llm: { model: 'scripted-model', api_key: 'sk-runner', base_url: llm.baseUrl },
      max_iterations: 5,
      max_budget_per_task: null,
      confirmation_mode: false,
      git_identity: { name: null, email: null },
      repository: null,
      secrets: {},
      mcp_config: { sse_servers: [], stdio_servers: [], shttp_servers: [] },
      instructions: null,
      initial_message: { content: [{ type: 'text', text: 'Finish at once.' }], run: true },
      replay_json: null,
      agent_type: 'default',
      agent: 'CodeActAgent',
      security_analyzer: null,
      condenser: { enabled: false, max_size: null },
      search: null,
      language: null,
    };
    /** What happened, in order: each delivered status event and each reported status. */
    const log: string[] = [];
    const held: (() => void)[] = [];
    let holding = true;
    const bridge = {
      startConfig: async () => config,
      report: async (r: ConversationReport) => {
        if (r.execution_status) log.push(`reported ${r.execution_status}`);
        return { success: true };
      },
      postEvents: async (_cid: string, _first: number, events: { kind: string; key?: string; value?: unknown }[]) => {
        if (holding) await new Promise<void>((r) => held.push(r));
        for (const e of events)
          if (e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status')
            log.push(`delivered ${e.value}`);
      },
    } as unknown as BridgeClient;
    const runner = new ConversationRunner({
      bridge,
      workspaceDir: workspace,
      markActive: () => undefined,
      log: () => undefined,
    });
    llm.enqueue(reply.finish('Done.'));
    await runner.handlers().start_conversation!({ type: 'start_conversation', payload: { conversation_id: cid } });
    // The LLM is called while the post of the `running` status is still held, and nothing is reported meanwhile.
    await waitFor('the LLM call', async () => (llm.requests.length ? true : undefined), { timeoutMs: 20_000 });
    expect(held.length).toBeGreaterThan(0);
    expect(log.filter((l) => l.startsWith('reported'))).toEqual([]);
    holding = false;
    for (const release of held.splice(0)) release();
    await waitFor('the finished report', async () => (log.includes('reported finished') ? true : undefined), {
      timeoutMs: 20_000,
    });
    await runner.closeAll();
    // Each reported status was delivered before it was reported, and the last one reported is the last one made.
    for (const [i, entry] of log.entries())
      if (entry.startsWith('reported '))
        expect(log.slice(0, i), entry).toContain(`delivered ${entry.slice('reported '.length)}`);
    expect(log.filter((l) => l.startsWith('reported')).at(-1)).toBe('reported finished');
  }, 30_000);
});
