import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SUMMARY_PROMPT_START } from '#sandbox/agent/condenser.ts';
import { AgentSession } from '#sandbox/agent/session.ts';
import { reply, startScriptedLlm, type RecordedRequest, type ScriptedReply } from '#test/helpers/scripted-llm.ts';
import { count, ms, percentile } from './stats.ts';

const STEPS = 200;

interface Run {
  /** Milliseconds between one model call arriving at the LLM and the next (the LLM answers at once). */
  gaps: number[];
  largestMessages: number;
  largestChars: number;
  summaries: number;
}

/**
 * One conversation of STEPS tool calls against a scripted LLM that answers at once, as the sandbox
 * runs it (state file written after every step, events to a sink that takes them at once).
 */
async function conversation(action: (n: number) => ScriptedReply, condenser: boolean): Promise<Run> {
  const arrivals: number[] = [];
  const isSummary = (r: RecordedRequest) =>
    String(r.body?.messages?.[0]?.content ?? '').startsWith(SUMMARY_PROMPT_START);
  let step = 0;
  const script = (r: RecordedRequest): ScriptedReply => {
    if (isSummary(r))
      return {
        text: `Summary: the agent ran ${step} steps, each printing a short listing. ${'Facts kept. '.repeat(40)}`,
      };
    arrivals.push(performance.now());
    step += 1;
    return step <= STEPS ? action(step) : reply.finish('done');
  };
  const llm = await startScriptedLlm(Array.from({ length: STEPS * 2 }, () => script));
  const workspaceDir = mkdtempSync(join(tmpdir(), 'bench-agent-'));
  const stateDir = mkdtempSync(join(tmpdir(), 'bench-agent-state-'));
  const session = new AgentSession({
    conversationId: 'bench',
    workspaceDir,
    stateFile: join(stateDir, 'agent.json'),
    llm: { model: 'bench', apiKey: null, baseUrl: llm.baseUrl, maxRetries: 0 },
    maxIterations: STEPS + 10,
    stuckThreshold: STEPS + 10,
    condenser: { enabled: condenser },
    emit: async () => undefined,
  });
  try {
    await session.start();
    await session.sendMessage({ content: [{ type: 'text', text: 'Run the steps' }], run: true });
    if (session.status !== 'finished') throw new Error(`bench conversation ended ${session.status}`);
    const agentCalls = llm.requests.filter((r) => !isSummary(r));
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    return {
      gaps,
      largestMessages: Math.max(...agentCalls.map((r) => r.body.messages.length)),
      largestChars: Math.max(...agentCalls.map((r) => JSON.stringify(r.body.messages).length)),
      summaries: llm.requests.length - agentCalls.length,
    };
  } finally {
    await session.close();
    await llm.close();
    rmSync(workspaceDir, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** Agent overhead per step without model time, and the largest prompt over a long conversation, condenser on and off. */
export async function benchAgent(): Promise<string> {
  const think = await conversation((n) => reply.tool('think', { thought: `step ${n}: nothing to do but count` }), true);
  const bashOn = await conversation((n) => reply.bash(`echo step ${n}; seq 1 30 | tr '\\n' ' '`), true);
  const bashOff = await conversation((n) => reply.bash(`echo step ${n}; seq 1 30 | tr '\\n' ' '`), false);
  const row = (name: string, r: Run) => `| ${name} | ${ms(percentile(r.gaps, 50))} | ${ms(percentile(r.gaps, 99))} |`;
  const size = (name: string, r: Run) =>
    `| ${name} | ${count(r.largestMessages)} | ${count(r.largestChars)} | ${r.summaries} |`;
  return [
    '## The agent',
    '',
    `A ${STEPS}-step conversation against a scripted LLM on loopback that answers at once, the session as the sandbox runs it (state file written after every step). The overhead of a step is the time between two model calls arriving at the LLM: parsing the answer, events, running the tool, saving the state, building the next request. \`execute_bash\` steps include the persistent shell's round trip (tmux).`,
    '',
    '| step | p50 | p99 |',
    '|---|---|---|',
    row('`think` (agent overhead alone, condenser on)', think),
    row('`execute_bash` `echo` (condenser on)', bashOn),
    row('`execute_bash` `echo` (condenser off)', bashOff),
    '',
    `The largest prompt the model received over the ${STEPS} steps (messages, and characters of their JSON), condenser at its default size (120):`,
    '',
    '| condenser | messages | characters | summarizing calls |',
    '|---|---|---|---|',
    size('on', bashOn),
    size('off', bashOff),
    '',
  ].join('\n');
}
