import type { settingsInputSchema } from '#shared/settings/model.ts';
import type * as z from '#shared/zod.ts';
import { startScriptedLlm, type ScriptedLlm, type ScriptStep } from '#test/helpers/scripted-llm.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/** A body of `POST /api/settings`, as a client sends it. */
export type SettingsBody = z.input<typeof settingsInputSchema>;

export interface AgentStackOptions {
  stack?: Parameters<typeof startTestStack>[0];
  /** The scripted LLM's first replies (`llm.enqueue` adds more later). */
  script?: ScriptStep[];
  /**
   * The dev user's settings, merged over the LLM's (model `m`, a dummy key, the scripted LLM's URL);
   * null saves none, for suites whose tests save their own per user (`saveSettings`).
   */
  settings?: SettingsBody | null;
}

/** The local stack and a scripted LLM, with settings that point the agent at it. */
export interface AgentStack {
  stack: TestStack;
  llm: ScriptedLlm;
  /**
   * Saves the LLM's settings with `settings` merged over them for the user of `key` (default: the dev
   * user); anything but a 200 throws, so a suite never runs on settings it does not have.
   */
  saveSettings(settings?: SettingsBody, key?: string): Promise<void>;
  /** Stops the stack, then the LLM; each is stopped even if the other fails to. */
  stop(): Promise<void>;
}

/** Runs every step, in order, whatever the ones before do; then throws the first failure, if any. */
async function stopAll(steps: (() => Promise<void>)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (e) {
      failures.push(e);
    }
  }
  if (failures.length) throw failures[0];
}

/** Saves the LLM's settings with `settings` over them for the user of `key` (see AgentStack.saveSettings). */
async function saveSettings(stack: TestStack, llm: ScriptedLlm, settings: SettingsBody = {}, key?: string) {
  const body = { llm_model: 'm', llm_api_key: 'sk-scripted', llm_base_url: llm.baseUrl, ...settings };
  const res = await stack.call('POST', '/api/settings', { key, body });
  if (res.status !== 200) throw new Error(`POST /api/settings answered ${res.status}: ${res.text}`);
}

/**
 * The set-up of the suites that run the agent: the local stack and the scripted LLM, and the dev user's
 * settings saved (unless `settings` is null).
 */
export async function startAgentStack(options: AgentStackOptions = {}): Promise<AgentStack> {
  // Started together: neither needs the other until the settings.
  const [stackStart, llmStart] = await Promise.allSettled([
    startTestStack(options.stack),
    startScriptedLlm(options.script),
  ]);
  const stack = stackStart.status === 'fulfilled' ? stackStart.value : undefined;
  const llm = llmStart.status === 'fulfilled' ? llmStart.value : undefined;
  const stop = () => stopAll([async () => stack?.stop(), async () => llm?.close()]);
  try {
    if (!stack || !llm)
      throw [stackStart, llmStart].find((s): s is PromiseRejectedResult => s.status === 'rejected')?.reason;
    const agent: AgentStack = {
      stack,
      llm,
      saveSettings: (settings, key) => saveSettings(stack, llm, settings, key),
      stop,
    };
    if (options.settings !== null) await agent.saveSettings(options.settings);
    return agent;
  } catch (e) {
    // The caller never gets what did start, so cannot stop it: stopped here, and the start's failure reported.
    await stop().catch(() => {});
    throw e;
  }
}
