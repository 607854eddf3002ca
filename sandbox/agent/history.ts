import type { ModelMessage, UserContent } from 'ai';
import type { Content, EventOf } from '#sandbox/agent/events.ts';

/** A class the session throws for a call that does not fit its state (declared here so helpers can throw it). */
export class AgentStateError extends Error {}

/**
 * One message of what the model sees, with the ids of the events it stands for (a user message,
 * the actions of an assistant turn, their observations), so a condensation can name what it forgot.
 */
export interface HistoryEntry {
  message: ModelMessage;
  eventIds: string[];
  /** The summary a condensation put in place of the forgotten middle. */
  summary?: boolean;
}

export type ToolResultPart = Extract<ModelMessage, { role: 'tool' }>['content'][number];

/** The model's form of a message; throws an AgentStateError for an image URL that is not a URL. */
export function toUserContent(content: Content[]): Exclude<UserContent, string> {
  const image = (url: string) => {
    if (!URL.canParse(url)) throw new AgentStateError(`image_urls: "${url.slice(0, 100)}" is not a URL.`);
    return { type: 'image' as const, image: new URL(url) };
  };
  return content.flatMap(
    (c): Exclude<UserContent, string> =>
      c.type === 'text' ? [{ type: 'text', text: c.text }] : c.image_urls.map(image),
  );
}

export function toolResult(
  event: Pick<EventOf<'ActionEvent'>, 'tool_call_id' | 'tool_name'>,
  text: string,
): ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId: event.tool_call_id,
    toolName: event.tool_name,
    output: { type: 'text', value: text },
  };
}

/** JSON turned the URLs of image parts into strings; the SDK reads a string as base64 data. */
export function reviveImages(m: ModelMessage): ModelMessage {
  if (m.role !== 'user' || typeof m.content === 'string') return m;
  return {
    ...m,
    content: m.content.map((p) =>
      p.type === 'image' && typeof p.image === 'string' && URL.canParse(p.image)
        ? { ...p, image: new URL(p.image) }
        : p,
    ),
  };
}

/** A message as plain text, for the summarizer (long tool results cut, images named). */
export function messageText(m: ModelMessage, maxPart = 2000): string {
  const cut = (t: string) => (t.length > maxPart ? `${t.slice(0, maxPart / 2)}\n[...]\n${t.slice(-maxPart / 2)}` : t);
  if (typeof m.content === 'string') return `${m.role}: ${cut(m.content)}`;
  const parts = (m.content as { type: string; [k: string]: unknown }[]).map((p) => {
    if (p.type === 'text') return cut(String(p.text));
    if (p.type === 'image') return '[image]';
    if (p.type === 'tool-call') return `call ${String(p.toolName)}(${cut(JSON.stringify(p.input))})`;
    if (p.type === 'tool-result') {
      const out = p.output as { type: string; value: unknown };
      return `result of ${String(p.toolName)}: ${cut(typeof out.value === 'string' ? out.value : JSON.stringify(out.value))}`;
    }
    return '';
  });
  return `${m.role}: ${parts.filter(Boolean).join('\n')}`;
}
