/**
 * A conversation's V1 events turned into what the page shows: a timeline (messages, actions with
 * their observations, errors, state changes) and the conversation's current state (execution status,
 * tokens and cost, the action waiting for confirmation). Pure: no DOM, no rendering; every string
 * here is untrusted and is rendered as text (or markdown through the sanitizer) by the views.
 */

// Events are wide and change between SDK versions: read them loosely, never trust a field's type.
export type AnyEvent = Record<string, any> & { id: string; kind: string; source?: string; timestamp?: string };

export type ActionView =
  | { type: 'command'; command: string }
  | {
      type: 'edit';
      command: string;
      path: string;
      fileText: string | null;
      oldStr: string | null;
      newStr: string | null;
    }
  | { type: 'mcp'; tool: string; args: string }
  | { type: 'think'; text: string }
  | { type: 'finish'; message: string }
  | { type: 'other'; tool: string; args: string };

export interface ObservationView {
  text: string;
  isError: boolean;
  exitCode: number | null;
  /** File edits: the file before and after, for a diff. */
  oldContent: string | null;
  newContent: string | null;
  rejected: string | null;
}

export type TimelineItem =
  | { kind: 'message'; id: string; role: 'user' | 'agent'; text: string; images: string[] }
  | {
      kind: 'action';
      id: string;
      tool: string;
      thought: string;
      reasoning: string;
      risk: string;
      action: ActionView;
      observation: ObservationView | null;
    }
  | { kind: 'error'; id: string; title: string; detail: string }
  | { kind: 'state'; id: string; text: string }
  | { kind: 'system'; id: string; text: string };

export interface Metrics {
  cost: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  budget: number | null;
}

export interface ConversationView {
  items: TimelineItem[];
  executionStatus: string | null;
  metrics: Metrics;
  /** Actions the agent waits on the user to accept or reject. */
  pending: Extract<TimelineItem, { kind: 'action' }>[];
}

const str = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v, null, 2);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The text of a content list (`[{type: "text", text}]`) or of a plain string. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c) =>
      c && typeof c === 'object' && (c as { type?: unknown }).type === 'text'
        ? str((c as { text?: unknown }).text)
        : '',
    )
    .filter(Boolean)
    .join('\n');
}

function imagesOf(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((c) =>
    c && typeof c === 'object' && Array.isArray((c as { image_urls?: unknown }).image_urls)
      ? (c as { image_urls: unknown[] }).image_urls.map(str)
      : [],
  );
}

function actionView(e: AnyEvent): ActionView {
  const a = (e.action && typeof e.action === 'object' ? e.action : {}) as Record<string, unknown>;
  const tool = str(e.tool_name);
  const kind = str(a.kind);
  if (kind === 'ExecuteBashAction' || tool === 'execute_bash' || tool === 'terminal')
    return { type: 'command', command: str(a.command) };
  if (
    kind === 'StrReplaceEditorAction' ||
    kind === 'FileEditorAction' ||
    tool === 'str_replace_editor' ||
    tool === 'file_editor'
  ) {
    return {
      type: 'edit',
      command: str(a.command),
      path: str(a.path),
      fileText: typeof a.file_text === 'string' ? a.file_text : null,
      oldStr: typeof a.old_str === 'string' ? a.old_str : null,
      newStr: typeof a.new_str === 'string' ? a.new_str : null,
    };
  }
  if (kind === 'MCPToolAction') return { type: 'mcp', tool, args: str(a.data ?? a) };
  if (kind === 'ThinkAction' || tool === 'think') return { type: 'think', text: str(a.thought) };
  if (kind === 'FinishAction' || tool === 'finish') return { type: 'finish', message: str(a.message) };
  const { kind: _k, ...rest } = a;
  return { type: 'other', tool, args: str(rest) };
}

function observationView(e: AnyEvent): ObservationView {
  const o = (e.observation && typeof e.observation === 'object' ? e.observation : {}) as Record<string, unknown>;
  const text = typeof o.output === 'string' ? o.output : textOf(o.content);
  return {
    text,
    isError: o.is_error === true || o.error === true || (typeof o.error === 'string' && o.error !== ''),
    exitCode: num(o.exit_code),
    oldContent: typeof o.old_content === 'string' ? o.old_content : null,
    newContent: typeof o.new_content === 'string' ? o.new_content : null,
    rejected: null,
  };
}

const stateText = (key: string, value: unknown): string | null => {
  if (key === 'execution_status') return `Agent ${str(value)}`;
  if (key === 'metrics') return null;
  return `${key}: ${str(value)}`;
};

/** Builds the view of a conversation from its events, in the order given (the stream's sequence order). */
export function viewOf(events: readonly AnyEvent[]): ConversationView {
  const items: TimelineItem[] = [];
  const actions = new Map<string, Extract<TimelineItem, { kind: 'action' }>>();
  let executionStatus: string | null = null;
  const metrics: Metrics = { cost: null, promptTokens: null, completionTokens: null, budget: null };
  for (const e of events) {
    switch (e.kind) {
      case 'MessageEvent': {
        const content = e.llm_message?.content;
        items.push({
          kind: 'message',
          id: e.id,
          role: e.source === 'user' ? 'user' : 'agent',
          text: textOf(content),
          images: imagesOf(content),
        });
        break;
      }
      case 'ActionEvent': {
        const item = {
          kind: 'action' as const,
          id: e.id,
          tool: str(e.tool_name),
          thought: textOf(e.thought),
          reasoning: str(e.reasoning_content),
          risk: str(e.security_risk) || 'UNKNOWN',
          action: actionView(e),
          observation: null,
        };
        actions.set(e.id, item);
        items.push(item);
        break;
      }
      case 'ObservationEvent':
      case 'UserRejectObservation':
      case 'AgentErrorEvent': {
        const target = actions.get(str(e.action_id));
        const view = e.kind === 'ObservationEvent' ? observationView(e) : null;
        if (e.kind === 'UserRejectObservation') {
          const rejected = {
            text: '',
            isError: false,
            exitCode: null,
            oldContent: null,
            newContent: null,
            rejected: str(e.rejection_reason) || 'Rejected',
          };
          if (target) target.observation = rejected;
          else items.push({ kind: 'state', id: e.id, text: `Action rejected: ${rejected.rejected}` });
        } else if (e.kind === 'AgentErrorEvent') {
          if (target)
            target.observation = {
              text: str(e.error),
              isError: true,
              exitCode: null,
              oldContent: null,
              newContent: null,
              rejected: null,
            };
          items.push({ kind: 'error', id: e.id, title: 'Agent error', detail: str(e.error) });
        } else if (target) target.observation = view;
        else items.push({ kind: 'system', id: e.id, text: view!.text });
        break;
      }
      case 'ConversationErrorEvent':
        items.push({ kind: 'error', id: e.id, title: str(e.code) || 'Conversation error', detail: str(e.detail) });
        break;
      case 'ConversationStateUpdateEvent': {
        const key = str(e.key);
        if (key === 'execution_status') executionStatus = str(e.value);
        if (key === 'metrics' && e.value && typeof e.value === 'object') {
          metrics.cost = num(e.value.accumulated_cost);
          metrics.promptTokens = num(e.value.prompt_tokens);
          metrics.completionTokens = num(e.value.completion_tokens);
          metrics.budget = num(e.value.max_budget_per_task);
        }
        if (
          key === 'full_state' &&
          e.value &&
          typeof e.value === 'object' &&
          typeof e.value.execution_status === 'string'
        )
          executionStatus = e.value.execution_status;
        const text = stateText(key, e.value);
        if (text) items.push({ kind: 'state', id: e.id, text });
        break;
      }
      case 'PauseEvent':
        items.push({ kind: 'state', id: e.id, text: 'Paused by the user' });
        break;
      case 'CondensationEvent':
        items.push({
          kind: 'system',
          id: e.id,
          text: `Earlier events summarized${e.summary ? `: ${str(e.summary)}` : ''}`,
        });
        break;
      case 'SystemPromptEvent':
        items.push({
          kind: 'system',
          id: e.id,
          text: `System prompt with ${Array.isArray(e.tools) ? e.tools.length : 0} tools`,
        });
        break;
      default:
        items.push({ kind: 'system', id: e.id, text: str(e.kind) });
    }
  }
  const pending =
    executionStatus === 'waiting_for_confirmation' ? [...actions.values()].filter((a) => a.observation === null) : [];
  return { items, executionStatus, metrics, pending };
}
