import { randomUUID } from 'node:crypto';
import { z } from 'zod';

/*
 * The agent's events, in OpenHands' kinds and field names (agent SDK v1), so clients that read
 * OpenHands events can read ours. The control plane checks only their envelope (shared/protocol.ts);
 * keep this file free of anything but zod, node built-ins and the protocol.
 */

export const eventSourceSchema = z.enum(['agent', 'user', 'environment']);
export type EventSource = z.infer<typeof eventSourceSchema>;

export const textContentSchema = z.object({ type: z.literal('text'), text: z.string() });
export const imageContentSchema = z.object({ type: z.literal('image'), image_urls: z.array(z.string()).min(1) });
export const contentSchema = z.discriminatedUnion('type', [textContentSchema, imageContentSchema]);
export type TextContent = z.infer<typeof textContentSchema>;
export type Content = z.infer<typeof contentSchema>;

const base = {
  /** uuid as 32 hex characters */
  id: z.string().regex(/^[0-9a-f]{32}$/, 'must be 32 hex characters'),
  /** ISO-8601 UTC with microseconds; strictly increasing within one conversation, so it orders events. */
  timestamp: z.iso.datetime(),
  source: eventSourceSchema,
};

/** An action or observation: a `kind` naming its type plus that type's fields (open, as tools vary). */
const kinded = z.looseObject({ kind: z.string().min(1) });

export const messageEventSchema = z.object({
  ...base,
  kind: z.literal('MessageEvent'),
  llm_message: z.object({ role: z.enum(['user', 'assistant', 'system']), content: z.array(contentSchema) }),
  /** Names of the repository microagents this user message triggered (their text went to the model). */
  activated_microagents: z.array(z.string()).optional(),
});

/** How risky the model judged an action (with the LLM security analyzer); UNKNOWN when it did not say. */
export const securityRisks = ['UNKNOWN', 'LOW', 'MEDIUM', 'HIGH'] as const;
export const securityRiskSchema = z.enum(securityRisks);
export type SecurityRisk = z.infer<typeof securityRiskSchema>;

export const actionEventSchema = z.object({
  ...base,
  kind: z.literal('ActionEvent'),
  thought: z.array(textContentSchema),
  action: kinded,
  tool_name: z.string(),
  tool_call_id: z.string(),
  // What the OpenHands web UI reads besides the above (optional: older sandboxes do not send them).
  /** The call as the model made it: `{id, type: "function", function: {name, arguments}}` (arguments as JSON text). */
  tool_call: z
    .object({
      id: z.string(),
      type: z.literal('function'),
      function: z.object({ name: z.string(), arguments: z.string() }),
    })
    .optional(),
  llm_response_id: z.string().nullable().optional(),
  security_risk: securityRiskSchema.optional(),
  reasoning_content: z.string().nullable().optional(),
  thinking_blocks: z.array(z.unknown()).optional(),
});

export const observationEventSchema = z.object({
  ...base,
  kind: z.literal('ObservationEvent'),
  observation: kinded,
  action_id: z.string(),
  tool_name: z.string(),
  tool_call_id: z.string(),
});

export const userRejectObservationSchema = z.object({
  ...base,
  kind: z.literal('UserRejectObservation'),
  action_id: z.string(),
  tool_name: z.string(),
  tool_call_id: z.string(),
  rejection_reason: z.string(),
});

export const agentErrorEventSchema = z.object({
  ...base,
  kind: z.literal('AgentErrorEvent'),
  error: z.string(),
  /** Set when the error belongs to one tool call (the model is told about it and goes on). */
  tool_name: z.string().nullable(),
  tool_call_id: z.string().nullable(),
});

export const conversationErrorEventSchema = z.object({
  ...base,
  kind: z.literal('ConversationErrorEvent'),
  code: z.string(),
  detail: z.string(),
});

export const conversationStateUpdateEventSchema = z.object({
  ...base,
  kind: z.literal('ConversationStateUpdateEvent'),
  /** e.g. `execution_status` (value: an ExecutionStatus) or `metrics` (value: Metrics) */
  key: z.string(),
  value: z.unknown(),
});

/** Part of the history was summarized for the model (the events stay; the model sees the summary instead). */
export const condensationEventSchema = z.object({
  ...base,
  kind: z.literal('CondensationEvent'),
  forgotten_event_ids: z.array(z.string()),
  summary: z.string().nullable(),
  /** Where the summary sits in what the model sees (after the kept first messages). */
  summary_offset: z.number().int().nullable(),
});

export const pauseEventSchema = z.object({ ...base, kind: z.literal('PauseEvent') });

export const systemPromptEventSchema = z.object({
  ...base,
  kind: z.literal('SystemPromptEvent'),
  system_prompt: textContentSchema,
  /** The tools offered to the model: name and description, and the OpenAI function form OpenHands clients read. */
  tools: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      type: z.literal('function').optional(),
      function: z
        .object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) })
        .optional(),
    }),
  ),
});

export const agentEventSchema = z.discriminatedUnion('kind', [
  messageEventSchema,
  actionEventSchema,
  observationEventSchema,
  userRejectObservationSchema,
  agentErrorEventSchema,
  conversationErrorEventSchema,
  conversationStateUpdateEventSchema,
  pauseEventSchema,
  systemPromptEventSchema,
  condensationEventSchema,
]);
export type AgentEvent = z.infer<typeof agentEventSchema>;
export type AgentEventKind = AgentEvent['kind'];
export type EventOf<K extends AgentEventKind> = Extract<AgentEvent, { kind: K }>;

/** A batch of events: what the event sink posts to the events bridge route. */
export const agentEventBatchSchema = z.array(agentEventSchema).max(100);

/** Builds events with fresh ids and timestamps that strictly increase, even within one millisecond. */
export class EventFactory {
  #lastMicros = 0;

  make<K extends AgentEventKind>(
    kind: K,
    source: EventSource,
    fields: Omit<EventOf<K>, 'kind' | 'id' | 'timestamp' | 'source'>,
  ): EventOf<K> {
    return { kind, id: randomUUID().replaceAll('-', ''), timestamp: this.#now(), source, ...fields } as EventOf<K>;
  }

  #now(): string {
    const micros = Math.max(Date.now() * 1000, this.#lastMicros + 1);
    this.#lastMicros = micros;
    const iso = new Date(Math.floor(micros / 1000)).toISOString(); // ...T12:00:00.123Z
    return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
  }
}
