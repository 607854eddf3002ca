import { generateText, type LanguageModel } from 'ai';
import { messageText, type HistoryEntry } from '#sandbox/agent/history.ts';

/**
 * Keeps what the model sees bounded, as OpenHands' LLM-summarizing condenser does: once the history
 * holds more than `maxSize` messages, the first few stay, the recent tail stays, and the middle is
 * replaced by a summary an LLM call writes (the previous summary is part of that middle, so facts
 * carry forward). The conversation's events are not touched: a CondensationEvent names what the
 * model no longer sees. A context-window error forces a condensation of whatever length there is.
 */

export const DEFAULT_CONDENSER_MAX_SIZE = 120;
const KEEP_FIRST = 4;

export interface CondensationPlan {
  /** Entries [0, head) stay. */
  head: number;
  /** Entries [head, tailStart) are summarized; [tailStart, end) stay. */
  tailStart: number;
}

/**
 * Which part to forget, or null when nothing needs (or can) be forgotten. Without `force` only a
 * history longer than `maxSize` is condensed, down to about half of it; with `force` (the model's
 * context overflowed) any history of more than a few messages is halved. Tool results never lose
 * their call: the head takes an answer's results with it, and the tail never starts with results.
 */
export function planCondensation(entries: HistoryEntry[], maxSize: number, force: boolean): CondensationPlan | null {
  if (!force && entries.length <= maxSize) return null;
  const target = Math.floor((force ? Math.min(entries.length, maxSize) : maxSize) / 2);
  let head = Math.min(KEEP_FIRST, Math.max(1, target - 2));
  while (head < entries.length && entries[head]!.message.role === 'tool') head += 1;
  let tailStart = entries.length - Math.max(1, target - head - 1);
  while (tailStart > head && entries[tailStart]!.message.role === 'tool') tailStart -= 1;
  // A summary alone in the middle is not worth a call.
  if (tailStart - head < 2) return null;
  return { head, tailStart };
}

const SUMMARY_SYSTEM = [
  'You maintain the memory of an autonomous coding agent whose early history is being condensed.',
  "Write a summary of the events below that lets the agent carry on without them: the user's goals and",
  'constraints; what was done and learned (files changed and how, commands run and their results, test',
  'outcomes, errors met); the current state (working directory, branch, what runs in the background);',
  'and what remains to do. Keep exact names, paths, numbers and error messages. If the events start',
  'with an earlier summary, fold it in. Answer with the summary only.',
].join(' ');

/** The marker the summarizing call's system prompt starts with (tests recognise the call by it). */
export const SUMMARY_PROMPT_START = SUMMARY_SYSTEM.slice(0, 60);

/** One LLM call that summarizes the forgotten entries; resolves to the summary and its token usage. */
export async function summarize(
  model: LanguageModel,
  forgotten: HistoryEntry[],
  options: { abortSignal?: AbortSignal; maxRetries?: number },
) {
  const transcript = forgotten.map((e) => messageText(e.message)).join('\n\n');
  const result = await generateText({
    model,
    system: SUMMARY_SYSTEM,
    prompt: `Events to summarize:\n\n${transcript}`,
    maxRetries: options.maxRetries ?? 2,
    abortSignal: options.abortSignal,
  });
  return { summary: result.text.trim(), usage: result.usage };
}

/** The history with the middle replaced by the summary, as a user message at `head`. */
export function applyCondensation(entries: HistoryEntry[], plan: CondensationPlan, summary: string): HistoryEntry[] {
  const note: HistoryEntry = {
    message: {
      role: 'user',
      content: `<CONDENSED_HISTORY>\nA summary of earlier events of this conversation, which are no longer shown:\n${summary}\n</CONDENSED_HISTORY>`,
    },
    eventIds: [],
    summary: true,
  };
  return [...entries.slice(0, plan.head), note, ...entries.slice(plan.tailStart)];
}
