import { generateText, type LanguageModel, type ToolSet } from 'ai';
import type { McpConfig } from '#shared/settings/model.ts';
import {
  applyCondensation,
  DEFAULT_CONDENSER_MAX_SIZE,
  planCondensation,
  summarize,
} from '#sandbox/agent/condenser.ts';
import {
  EventFactory,
  type AgentEvent,
  type Content,
  type EventOf,
  type EventSource,
  type SecurityRisk,
} from '#sandbox/agent/events.ts';
import type { AgentMetrics, ExecutionStatus } from '#shared/protocol.ts';
import { AgentStateError, toolResult, toUserContent, type ToolResultPart } from '#sandbox/agent/history.ts';
import { callResiliently } from '#sandbox/agent/llm-call.ts';
import {
  describeLlmError,
  LlmConfigError,
  MetricsCounter,
  resolveModel,
  type LlmConfig,
  type RetryPolicy,
} from '#sandbox/agent/llm.ts';
import { secretMasker } from '#sandbox/agent/mask.ts';
import { McpHub } from '#sandbox/agent/mcp.ts';
import { loadMicroagents, triggered, type Microagent } from '#sandbox/agent/microagents.ts';
import { buildSystemPrompt } from '#sandbox/agent/prompt.ts';
import { parseTrajectory, TrajectoryError, type ReplayStep } from '#sandbox/agent/replay.ts';
import { readState, writeState, type LoopState } from '#sandbox/agent/state-file.ts';
import {
  assembleTools,
  commandEnvironment,
  needsConfirmation,
  PLAN_FILE,
  splitRisk,
  type AgentKind,
} from '#sandbox/agent/toolbox.ts';
import { FileEditor } from '#sandbox/agent/tools/editor.ts';
import { Terminal } from '#sandbox/agent/tools/terminal.ts';
import type { AgentTool, ToolOutcome } from '#sandbox/agent/tools/toolset.ts';

export { AgentStateError } from '#sandbox/agent/history.ts';

export interface AgentSessionOptions {
  conversationId: string;
  /** The directory the agent works in; commands run there and file paths are confined to it. */
  workspaceDir: string;
  llm: LlmConfig &
    Partial<RetryPolicy> & {
      /** Per attempt of a model call (default 120 s). */
      timeoutMs?: number;
    };
  /** `CodeActAgent` (default: shell, editor, web, MCP) or `PlanningAgent` (reads, writes PLAN.md only). */
  agent?: AgentKind;
  /** Model calls per task (a task starts with each user message); null: the default, 100. */
  maxIterations?: number | null;
  /** US dollars; the loop stops once the conversation's accumulated cost reaches it. null: no limit. */
  maxBudgetPerTask?: number | null;
  /** Ask before actions: every one (think and finish excepted), or with an analyzer only HIGH and UNKNOWN risks. */
  confirmationMode?: boolean;
  /** `llm`: the model rates every action's risk (`security_risk`); null: no analyzer. */
  securityAnalyzer?: 'llm' | null;
  /** The LLM-summarizing condenser: on by default, at 120 messages. */
  condenser?: { enabled: boolean; maxSize?: number | null };
  /** Web search (Tavily) and fetch, with `search_api_key`. */
  search?: { apiKey: string; baseUrl?: string | null } | null;
  /** The language the agent writes to the user in (`language` of the settings). */
  language?: string | null;
  /** Added to the system prompt: conversation_instructions, repository and microagent context. */
  instructions?: string;
  mcpConfig?: McpConfig | null;
  /** Custom secrets: name -> value. Commands get them as environment; events never show the values. */
  secrets?: Record<string, string>;
  gitIdentity?: { name: string; email: string } | null;
  /** Receives events in order; awaited, so a slow receiver slows the agent instead of losing events. */
  emit: (events: AgentEvent[]) => Promise<void>;
  /** A command without its own `timeout` returns after this long at most, still running (default 120 s). */
  commandTimeoutMs?: number;
  /** The longest `timeout` a command may ask for (default 600 s). */
  maxCommandTimeoutMs?: number;
  /** A command with no new output for this long returns, still running (default 30 s, as OpenHands). */
  noChangeTimeoutMs?: number;
  maxOutputChars?: number;
  /** The same action with the same result this many times in a row means the agent is stuck (default 4). */
  stuckThreshold?: number;
  /** Extra environment for commands (e.g. PATH additions of the sandbox image). */
  commandEnv?: Record<string, string>;
  /** Read `.openhands/microagents/` of the workspace at start (default true). */
  loadMicroagents?: boolean;
  /**
   * Where the session keeps what it needs to carry on in a new process (history, pending actions,
   * metrics, status): written after every step, read by `start()`. Put it on storage that survives a
   * sandbox pause, outside the workspace. Without it a restarted sandbox starts the conversation afresh.
   */
  stateFile?: string;
}

export interface UserMessage {
  content: Content[];
  /** Start the agent loop after recording the message. */
  run?: boolean;
}

interface PendingAction {
  event: EventOf<'ActionEvent'>;
  tool: AgentTool | undefined;
  args: Record<string, unknown>;
}

const DEFAULT_MAX_ITERATIONS = 100;
const MCP_CONNECT_TIMEOUT_MS = 30_000;
const MCP_CALL_TIMEOUT_MS = 300_000;
/** Forced condensations per model call when the context overflows, before giving up. */
const MAX_FORCED_CONDENSATIONS = 3;

/**
 * One conversation with the coding agent: the LLM tool loop, its tools, its state and its events.
 *
 * The loop makes one model call per iteration, so it can count iterations, check the budget, stop for
 * confirmation and pause between calls. It never throws for what the model, the tools or the LLM
 * service do: those become events and an execution status. Methods that start the loop return a
 * promise that settles when the loop stops (any status but `running`).
 *
 * @example
 * const session = new AgentSession({ conversationId, workspaceDir, llm, emit: (e) => sink.push(e) });
 * await session.start();
 * await session.sendMessage({ content: [{ type: 'text', text: 'Add a README' }], run: true });
 * session.status; // 'finished'
 */
export class AgentSession {
  readonly conversationId: string;
  readonly #o: AgentSessionOptions;
  readonly #events = new EventFactory();
  #mask: <T>(v: T) => T;
  readonly #secretValues: string[];
  readonly #metrics: MetricsCounter;
  readonly #terminal: Terminal;
  readonly #s: Omit<LoopState, 'metrics' | 'pending'> = {
    status: 'idle',
    history: [],
    inbox: [],
    invalidResults: [],
    iterations: 0,
    recent: [],
  };
  #pending: PendingAction[] = [];
  #tools = new Map<string, AgentTool>();
  #toolSet: ToolSet = {};
  #systemPrompt = '';
  #model: LanguageModel | null = null;
  #modelError: string | null = null;
  #mcp: McpHub | null = null;
  #loop: Promise<void> | null = null;
  #pauseRequested = false;
  #llmAbort: AbortController | null = null;
  #microagents: Microagent[] = [];
  #started = false;
  #emitting: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: AgentSessionOptions) {
    this.#o = options;
    this.conversationId = options.conversationId;
    this.#secretValues = [
      ...Object.values(options.secrets ?? {}),
      ...(options.llm.apiKey ? [options.llm.apiKey] : []),
      ...(options.search?.apiKey ? [options.search.apiKey] : []),
    ];
    this.#mask = secretMasker(this.#secretValues);
    this.#metrics = new MetricsCounter(options.llm, options.maxBudgetPerTask ?? null);
    this.#terminal = new Terminal({
      cwd: options.workspaceDir,
      env: () => commandEnvironment(options),
      maxOutputChars: options.maxOutputChars ?? 30_000,
      noChangeTimeoutMs: options.noChangeTimeoutMs ?? 30_000,
      hardTimeoutMs: options.commandTimeoutMs ?? 120_000,
      maxTimeoutMs: options.maxCommandTimeoutMs ?? 600_000,
    });
  }

  get status(): ExecutionStatus {
    return this.#s.status;
  }

  get metrics(): AgentMetrics {
    return this.#metrics.snapshot();
  }

  /** Connects the MCP servers (a failing one is reported, not fatal), then announces the prompt and tools. */
  async start(): Promise<void> {
    if (this.#started) throw new AgentStateError('The session is already started.');
    this.#started = true;
    let saved: LoopState | null = null;
    const startErrors: AgentEvent[] = [];
    try {
      saved = this.#o.stateFile ? readState(this.#o.stateFile) : null;
    } catch (err) {
      startErrors.push(
        this.#event('AgentErrorEvent', 'environment', {
          error: `The saved conversation state could not be read, so the agent starts afresh: ${(err as Error).message}`,
          tool_name: null,
          tool_call_id: null,
        }),
      );
    }
    if (this.#o.loadMicroagents !== false) this.#microagents = await loadMicroagents(this.#o.workspaceDir);
    try {
      this.#model = resolveModel(this.#o.llm);
    } catch (err) {
      if (!(err instanceof LlmConfigError)) throw err;
      this.#modelError = err.message;
    }
    const agent = this.#o.agent ?? 'CodeActAgent';
    if (this.#o.mcpConfig && agent !== 'PlanningAgent') {
      this.#mcp = await McpHub.connect(this.#o.mcpConfig, {
        cwd: this.#o.workspaceDir,
        reservedNames: [
          'execute_bash',
          'str_replace_editor',
          'think',
          'finish',
          ...(this.#o.search ? ['web_search', 'fetch'] : []),
        ],
        connectTimeoutMs: MCP_CONNECT_TIMEOUT_MS,
        onServerError: (server, message) =>
          startErrors.push(
            this.#event('AgentErrorEvent', 'environment', {
              error: `MCP server ${server} is unavailable: ${message}`,
              tool_name: null,
              tool_call_id: null,
            }),
          ),
      });
    }
    const toolbox = assembleTools({
      agent,
      workspaceDir: this.#o.workspaceDir,
      terminal: this.#terminal,
      editor: new FileEditor(this.#o.workspaceDir),
      securityAnalyzer: this.#analyzer,
      web: this.#o.search ? { apiKey: this.#o.search.apiKey, baseUrl: this.#o.search.baseUrl } : null,
      mcp: this.#mcp,
      mcpCallTimeoutMs: MCP_CALL_TIMEOUT_MS,
      hardTimeoutMs: this.#o.commandTimeoutMs ?? 120_000,
      maxCommandTimeoutMs: this.#o.maxCommandTimeoutMs ?? 600_000,
      noChangeTimeoutMs: this.#o.noChangeTimeoutMs ?? 30_000,
    });
    this.#tools = toolbox.tools;
    this.#toolSet = toolbox.toolSet;
    this.#systemPrompt = buildSystemPrompt({
      workspaceDir: this.#o.workspaceDir,
      secretNames: Object.keys(this.#o.secrets ?? {}),
      microagents: this.#microagents.filter((a) => !a.triggers.length),
      instructions: this.#o.instructions,
      language: this.#o.language,
      planFile: agent === 'PlanningAgent' ? PLAN_FILE : undefined,
      securityAnalyzer: this.#analyzer,
    });
    await this.#emit(
      this.#event('SystemPromptEvent', 'agent', {
        system_prompt: { type: 'text', text: this.#systemPrompt },
        tools: toolbox.specs,
      }),
      ...startErrors,
    );
    if (saved) this.#restore(saved);
    if (this.#modelError) await this.#fail(this.#modelError);
    else if (saved) await this.#setStatus(this.#s.status, true);
    else await this.#setStatus('idle');
  }

  /** Records a user message (text and images) and, with `run`, starts the loop; resolves when it stops. */
  async sendMessage(message: UserMessage): Promise<void> {
    this.#assertStarted();
    const content = toUserContent(message.content);
    const text = message.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    const activated = triggered(this.#microagents, text);
    for (const a of activated)
      content.push({
        type: 'text',
        text: `<EXTRA_INFO>\nThe following information comes from the repository microagent "${a.name}", triggered by a keyword of this message:\n${a.content}\n</EXTRA_INFO>`,
      });
    const event = this.#event('MessageEvent', 'user', {
      llm_message: { role: 'user', content: message.content },
      ...(activated.length ? { activated_microagents: activated.map((a) => a.name) } : {}),
    });
    await this.#emit(event);
    this.#s.inbox.push({ message: { role: 'user', content }, eventIds: [event.id] });
    this.#s.iterations = 0;
    this.#s.recent = [];
    this.#save();
    if (this.#s.status === 'finished' || this.#s.status === 'stuck' || this.#s.status === 'error')
      await this.#setStatus('idle');
    if (message.run) await this.run();
  }

  /** Masks one more value from now on (a renewed LLM gateway credential), in events and tool results. */
  addSecret(value: string): void {
    this.#secretValues.push(value);
    this.#mask = secretMasker(this.#secretValues);
  }

  /**
   * Starts the loop (or returns the running one) and resolves when it stops. With an action waiting
   * for confirmation it only restores that state; a finished or stuck agent waits for a new message.
   */
  run(): Promise<void> {
    this.#assertStarted();
    // A loop that a pause is winding down (its action under way) is not this run: go on after it stops.
    if (this.#loop) return this.#pauseRequested ? this.#loop.then(() => this.run()) : this.#loop;
    if (this.#pending.length) {
      return this.#s.status === 'paused' ? this.#setStatus('waiting_for_confirmation') : Promise.resolve();
    }
    if ((this.#s.status === 'finished' || this.#s.status === 'stuck') && !this.#s.inbox.length)
      return Promise.resolve();
    return this.#startLoop(() => this.#step());
  }

  /**
   * Stops the loop after the action under way (an LLM call under way is abandoned, to be made again
   * on `run`). The status is `paused` at once: a command under way runs to its end and its result is
   * kept in the history (the next run's model call sees it), but nothing new starts. Resolves once
   * the loop has stopped.
   */
  async pause(): Promise<void> {
    this.#assertOpen();
    await this.#emit(this.#event('PauseEvent', 'user', {}));
    if (this.#loop) {
      this.#pauseRequested = true;
      this.#llmAbort?.abort();
      if (this.#s.status === 'running') await this.#setStatus('paused');
      await this.#loop;
    } else if (this.#s.status === 'idle' || this.#s.status === 'waiting_for_confirmation') {
      await this.#setStatus('paused');
    }
  }

  /** Accepts (runs) or rejects the actions waiting for confirmation, then lets the loop go on. */
  respondToConfirmation(decision: { accept: boolean; reason?: string }): Promise<void> {
    this.#assertOpen();
    if (!this.#pending.length || this.#loop) throw new AgentStateError('No action is waiting for confirmation.');
    const pending = this.#pending;
    this.#pending = [];
    return this.#startLoop(async () => {
      if (decision.accept) return this.#execute(pending);
      const reason = decision.reason?.trim() || 'The user rejected this action.';
      const results = this.#takeInvalidResults();
      const ids: string[] = [];
      for (const p of pending) {
        const rejected = this.#event('UserRejectObservation', 'user', {
          action_id: p.event.id,
          tool_name: p.event.tool_name,
          tool_call_id: p.event.tool_call_id,
          rejection_reason: reason,
        });
        await this.#emit(rejected);
        ids.push(rejected.id);
        results.push(toolResult(p.event, `The user rejected this action: ${reason}`));
      }
      this.#s.history.push({ message: { role: 'tool', content: results }, eventIds: ids });
      return 'continue';
    });
  }

  /**
   * Re-executes the actions of a recorded trajectory in order, without the LLM (and without asking
   * for confirmation: the trajectory is the user's own), emitting events as the loop would. With
   * `run`, the agent then continues from there with the LLM. An unreadable trajectory is an
   * AgentErrorEvent and status `error`.
   */
  async replay(trajectory: unknown, options: { run?: boolean } = {}): Promise<void> {
    this.#assertStarted();
    if (this.#loop || this.#pending.length)
      throw new AgentStateError('The agent is running or waiting for a confirmation; a replay needs it stopped.');
    let steps: ReplayStep[];
    try {
      steps = parseTrajectory(trajectory);
    } catch (err) {
      if (!(err instanceof TrajectoryError)) throw err;
      return this.#fail(err.message);
    }
    await this.#startLoop(async () => {
      let n = 0;
      for (const step of steps) {
        if (this.#pauseRequested) return 'stop';
        if (step.type === 'message') {
          const content: Content[] = [
            { type: 'text', text: step.text },
            ...(step.imageUrls.length ? [{ type: 'image' as const, image_urls: step.imageUrls }] : []),
          ];
          const event = this.#event('MessageEvent', step.role === 'user' ? 'user' : 'agent', {
            llm_message: { role: step.role, content },
          });
          await this.#emit(event);
          this.#s.history.push({
            message:
              step.role === 'user'
                ? { role: 'user', content: toUserContent(content) }
                : { role: 'assistant', content: step.text },
            eventIds: [event.id],
          });
          continue;
        }
        const call = { toolCallId: `replay_${++n}`, toolName: step.toolName, input: step.args };
        const event = this.#actionEvent(call, [], 'UNKNOWN', null);
        await this.#emit(event);
        this.#s.history.push({
          message: { role: 'assistant', content: [{ type: 'tool-call', ...call }] },
          eventIds: [event.id],
        });
        await this.#execute([{ event, tool: this.#tools.get(step.toolName), args: step.args }], { detectStuck: false });
      }
      return 'stop';
    });
    if (this.#s.status === 'running') await this.#setStatus('idle');
    if (options.run && this.#s.status === 'idle') await this.run();
  }

  /** Stops everything: the loop, the shell and what it still runs, MCP servers. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#pauseRequested = true;
    this.#llmAbort?.abort();
    this.#closed = true;
    await this.#terminal.close();
    await this.#loop?.catch(() => undefined);
    await this.#mcp?.close();
    await this.#emitting;
  }

  // --- the loop ------------------------------------------------------------------------------------

  get #analyzer(): boolean {
    return this.#o.securityAnalyzer === 'llm';
  }

  /**
   * Runs `first` (one step of work) then model steps until one says stop. Every way out leaves a
   * status other than `running`; an unexpected exception becomes an AgentErrorEvent.
   */
  #startLoop(first: () => Promise<'continue' | 'stop'>): Promise<void> {
    this.#pauseRequested = false;
    const loop = (async () => {
      try {
        await this.#setStatus('running');
        let next = first;
        while ((await next()) === 'continue') {
          this.#save();
          if (this.#pauseRequested) break;
          next = () => this.#step();
        }
        if (this.#pauseRequested && !this.#closed && this.#s.status === 'running') await this.#setStatus('paused');
      } catch (err) {
        await this.#fail(`The agent failed: ${(err as Error).message}`);
      } finally {
        this.#loop = null;
      }
    })();
    this.#loop = loop;
    return loop;
  }

  /** One iteration: limits, condensation, one model call, then its actions (or a stop for confirmation). */
  async #step(): Promise<'continue' | 'stop'> {
    if (this.#pauseRequested) return 'stop';
    if (this.#s.inbox.length) this.#s.history.push(...this.#s.inbox.splice(0));
    if (!this.#model) {
      await this.#fail(this.#modelError ?? 'No model is configured.');
      return 'stop';
    }
    const maxIterations = this.#o.maxIterations ?? DEFAULT_MAX_ITERATIONS;
    if (this.#s.iterations >= maxIterations) {
      return this.#stopForLimit(
        'MaxIterationsReached',
        `The agent stopped: it reached the maximum number of iterations (max_iterations = ${maxIterations}). Send a message to continue.`,
      );
    }
    const budget = this.#o.maxBudgetPerTask;
    if (budget != null && this.#metrics.cost >= budget) {
      return this.#stopForLimit(
        'MaxBudgetReached',
        `The agent stopped: the conversation has cost $${this.#metrics.cost.toFixed(4)}, which reaches the budget (max_budget_per_task = $${budget}).`,
      );
    }
    if (this.#o.condenser?.enabled !== false) await this.#condense(false);
    this.#s.iterations += 1;
    const result = await this.#callModel(this.#model);
    if (result === 'paused' || result === 'failed') return 'stop';

    const text = result.text.trim();
    const calls = result.toolCalls;
    if (!calls.length) {
      const event = text
        ? this.#event('MessageEvent', 'agent', {
            llm_message: { role: 'assistant', content: [{ type: 'text', text }] },
          })
        : null;
      this.#s.history.push({ message: { role: 'assistant', content: result.text }, eventIds: event ? [event.id] : [] });
      if (event) await this.#emit(event);
      await this.#setStatus('finished');
      return 'stop';
    }

    const pending: PendingAction[] = [];
    const invalid: { toolCallId: string; toolName: string; message: string }[] = [];
    for (const [i, c] of calls.entries()) {
      if ('invalid' in c && c.invalid) {
        invalid.push({
          toolCallId: c.toolCallId,
          toolName: c.toolName,
          message: (c.error as Error | undefined)?.message ?? 'invalid tool call',
        });
        continue;
      }
      const { risk, args } = splitRisk(c.input);
      const event = this.#actionEvent(
        { ...c, input: args },
        i === 0 && text ? [{ type: 'text', text }] : [],
        risk,
        result.response.id ?? null,
      );
      pending.push({ event, tool: this.#tools.get(c.toolName), args });
    }
    this.#s.history.push({
      message: {
        role: 'assistant',
        content: [
          ...(text ? [{ type: 'text' as const, text }] : []),
          ...calls.map((c) => ({
            type: 'tool-call' as const,
            toolCallId: c.toolCallId,
            toolName: c.toolName,
            input: c.input,
          })),
        ],
      },
      eventIds: pending.map((p) => p.event.id),
    });
    const invalidResults: ToolResultPart[] = [];
    for (const bad of invalid) {
      const error = this.#tools.has(bad.toolName)
        ? `Invalid arguments for tool ${bad.toolName}: ${bad.message}. Call it again with arguments that fit its schema.`
        : `Tool "${bad.toolName}" does not exist. Available tools: ${[...this.#tools.keys()].join(', ')}.`;
      await this.#emit(
        this.#event('AgentErrorEvent', 'agent', { error, tool_name: bad.toolName, tool_call_id: bad.toolCallId }),
      );
      invalidResults.push(toolResult({ tool_call_id: bad.toolCallId, tool_name: bad.toolName }, `ERROR: ${error}`));
    }
    await this.#emit(...pending.map((p) => p.event));
    if (!pending.length) {
      this.#s.history.push({ message: { role: 'tool', content: invalidResults }, eventIds: [] });
      return 'continue';
    }
    this.#s.invalidResults = invalidResults;
    const wait =
      this.#o.confirmationMode &&
      needsConfirmation(
        pending.map((p) => ({
          toolName: p.event.tool_name,
          risk: p.event.security_risk ?? 'UNKNOWN',
          known: Boolean(p.tool),
        })),
        this.#analyzer,
      );
    if (wait) {
      this.#pending = pending;
      await this.#setStatus('waiting_for_confirmation');
      return 'stop';
    }
    return this.#execute(pending);
  }

  #takeInvalidResults(): ToolResultPart[] {
    const results = this.#s.invalidResults;
    this.#s.invalidResults = [];
    return results;
  }

  /**
   * One model call: retried with back-off on 429, 5xx, time-outs and dropped connections (each retry
   * an event), and after a condensation when the context window overflows. Past the bounds: an
   * AgentErrorEvent saying why, and status `error` (`paused` for a 402: a budget refusal).
   */
  async #callModel(model: LanguageModel) {
    const abort = new AbortController();
    this.#llmAbort = abort;
    try {
      const outcome = await callResiliently({
        model: this.#o.llm.model,
        policy: {
          maxRetries: this.#o.llm.maxRetries ?? 4,
          baseDelayMs: this.#o.llm.baseDelayMs ?? 1000,
          maxDelayMs: this.#o.llm.maxDelayMs ?? 60_000,
        },
        timeoutMs: this.#o.llm.timeoutMs ?? 120_000,
        pause: abort.signal,
        attempt: (abortSignal) =>
          generateText({
            model,
            system: this.#systemPrompt,
            messages: this.#s.history.map((e) => e.message),
            tools: this.#toolSet,
            maxRetries: 0,
            abortSignal,
          }),
        shorten: () => this.#condense(true),
        maxShortenings: MAX_FORCED_CONDENSATIONS,
        onRetry: (value) =>
          this.#emit(this.#event('ConversationStateUpdateEvent', 'environment', { key: 'llm_retry', value })),
      });
      if ('paused' in outcome) {
        this.#s.iterations -= 1;
        return 'paused' as const;
      }
      if ('error' in outcome) {
        // A budget refusal is not an iteration: the same call is made again on `run`.
        if (outcome.budget) this.#s.iterations -= 1;
        await this.#fail(outcome.error, outcome.budget ? 'paused' : 'error');
        return 'failed' as const;
      }
      this.#metrics.add(outcome.result.usage);
      await this.#emit(
        this.#event('ConversationStateUpdateEvent', 'environment', { key: 'metrics', value: this.#metrics.snapshot() }),
      );
      return outcome.result;
    } finally {
      this.#llmAbort = null;
    }
  }

  /**
   * Summarizes the middle of the history when it is longer than the condenser's size (or, with
   * `force`, whenever it can be shortened). Returns whether the history got shorter.
   */
  async #condense(force: boolean): Promise<boolean> {
    const maxSize = this.#o.condenser?.maxSize ?? DEFAULT_CONDENSER_MAX_SIZE;
    const plan = planCondensation(this.#s.history, maxSize, force);
    if (!plan || !this.#model) return false;
    const forgotten = this.#s.history.slice(plan.head, plan.tailStart);
    let summary: string;
    try {
      const r = await summarize(this.#model, forgotten, {
        abortSignal: AbortSignal.timeout(this.#o.llm.timeoutMs ?? 120_000),
        maxRetries: this.#o.llm.maxRetries ?? 2,
      });
      this.#metrics.add(r.usage);
      summary = r.summary || '(The summarizer returned nothing.)';
    } catch (err) {
      // Without a summary the history stays whole, unless it cannot fit at all.
      await this.#emit(
        this.#event('AgentErrorEvent', 'environment', {
          error: `Condensing the history failed: ${describeLlmError(err, this.#o.llm.model)}`,
          tool_name: null,
          tool_call_id: null,
        }),
      );
      if (!force) return false;
      summary = '(Earlier events were dropped to fit the context window; no summary could be made.)';
    }
    this.#s.history = applyCondensation(this.#s.history, plan, summary);
    await this.#emit(
      this.#event('CondensationEvent', 'environment', {
        forgotten_event_ids: forgotten.flatMap((e) => e.eventIds),
        summary,
        summary_offset: plan.head,
      }),
    );
    this.#save();
    return true;
  }

  /** Runs actions in order, tells the model their results, and says whether the loop goes on. */
  async #execute(actions: PendingAction[], options: { detectStuck?: boolean } = {}): Promise<'continue' | 'stop'> {
    const results = this.#takeInvalidResults();
    const ids: string[] = [];
    let finished = false;
    let stuck = false;
    for (const a of actions) {
      if (this.#closed) return 'stop';
      const { outcome, eventId } = await this.#runAction(a);
      ids.push(eventId);
      results.push(toolResult(a.event, this.#mask(outcome.text)));
      if (outcome.finish) finished = true;
      if (options.detectStuck !== false && this.#repeats(a, outcome)) stuck = true;
    }
    this.#s.history.push({ message: { role: 'tool', content: results }, eventIds: ids });
    if (finished) {
      await this.#setStatus('finished');
      return 'stop';
    }
    if (stuck) {
      const n = this.#o.stuckThreshold ?? 4;
      await this.#emit(
        this.#event('ConversationErrorEvent', 'environment', {
          code: 'AgentStuckInLoop',
          detail: `The agent repeated the same action with the same result ${n} times in a row, so it was stopped. Send a message to steer it.`,
        }),
      );
      await this.#setStatus('stuck');
      return 'stop';
    }
    return 'continue';
  }

  async #runAction(a: PendingAction): Promise<{ outcome: ToolOutcome; eventId: string }> {
    const { event } = a;
    const errorOutcome = async (error: string) => {
      const e = this.#event('AgentErrorEvent', 'agent', {
        error,
        tool_name: event.tool_name,
        tool_call_id: event.tool_call_id,
      });
      await this.#emit(e);
      return {
        outcome: { observation: { kind: 'AgentError' }, text: `ERROR: ${error}`, isError: true },
        eventId: e.id,
      };
    };
    if (!a.tool)
      return errorOutcome(
        `Tool "${event.tool_name}" does not exist. Available tools: ${[...this.#tools.keys()].join(', ')}.`,
      );
    let outcome: ToolOutcome;
    try {
      outcome = await a.tool.run(a.args);
    } catch (err) {
      const msg =
        err instanceof Error && err.name === 'ZodError'
          ? `Invalid arguments for tool ${a.tool.name}: ${err.message}`
          : `Tool ${a.tool.name} failed: ${(err as Error).message}`;
      return errorOutcome(msg);
    }
    const e = this.#event('ObservationEvent', 'environment', {
      observation: outcome.observation,
      action_id: event.id,
      tool_name: event.tool_name,
      tool_call_id: event.tool_call_id,
    });
    await this.#emit(e);
    return { outcome, eventId: e.id };
  }

  /** Whether this action and result complete a run of identical ones as long as the stuck threshold. */
  #repeats(a: PendingAction, outcome: ToolOutcome): boolean {
    const n = this.#o.stuckThreshold ?? 4;
    const recent = this.#s.recent;
    recent.push(JSON.stringify([a.event.tool_name, a.args, outcome.text]));
    if (recent.length > n) recent.shift();
    return recent.length === n && recent.every((s) => s === recent[0]);
  }

  async #stopForLimit(code: string, detail: string): Promise<'stop'> {
    await this.#emit(this.#event('ConversationErrorEvent', 'environment', { code, detail }));
    await this.#setStatus('error');
    return 'stop';
  }

  // --- events and state ------------------------------------------------------------------------

  #actionEvent(
    call: { toolCallId: string; toolName: string; input: unknown },
    thought: { type: 'text'; text: string }[],
    risk: SecurityRisk,
    responseId: string | null,
  ): EventOf<'ActionEvent'> {
    const args = (call.input ?? {}) as Record<string, unknown>;
    const t = this.#tools.get(call.toolName);
    const action = t ? t.action(args) : { kind: 'UnknownAction', ...args };
    return this.#event('ActionEvent', 'agent', {
      thought,
      action,
      tool_name: call.toolName,
      tool_call_id: call.toolCallId,
      tool_call: {
        id: call.toolCallId,
        type: 'function',
        function: { name: call.toolName, arguments: JSON.stringify(args) },
      },
      llm_response_id: responseId,
      security_risk: risk,
      reasoning_content: null,
      thinking_blocks: [],
    });
  }

  #event<K extends AgentEvent['kind']>(
    kind: K,
    source: EventSource,
    fields: Omit<EventOf<K>, 'kind' | 'id' | 'timestamp' | 'source'>,
  ): EventOf<K> {
    return this.#events.make(kind, source, fields);
  }

  /** Emits in order (each batch after the previous one was taken), every secret masked. */
  #emit(...events: AgentEvent[]): Promise<void> {
    if (!events.length) return this.#emitting;
    const masked = events.map((e) => this.#mask(e));
    this.#emitting = this.#emitting
      .then(() => this.#o.emit(masked))
      .catch((err) => {
        // The receiver owns delivery (the event sink retries); a failure there must not stop the agent.
        process.stderr.write(`agent: emitting events failed: ${(err as Error).message}\n`);
      });
    return this.#emitting;
  }

  async #setStatus(status: ExecutionStatus, announce = false): Promise<void> {
    if (this.#s.status === status && status !== 'idle' && !announce) return;
    this.#s.status = status;
    this.#save();
    await this.#emit(
      this.#event('ConversationStateUpdateEvent', 'environment', { key: 'execution_status', value: status }),
    );
  }

  /** An AgentErrorEvent, then `error` (or `paused`: a budget refusal, which `run` tries again once raised). */
  async #fail(error: string, status: 'error' | 'paused' = 'error'): Promise<void> {
    await this.#emit(this.#event('AgentErrorEvent', 'agent', { error, tool_name: null, tool_call_id: null }));
    await this.#setStatus(status);
  }

  /** Writes the state file (atomically: a reader never sees half of it). */
  #save(): void {
    const file = this.#o.stateFile;
    if (!file || !this.#started) return;
    writeState(file, {
      ...this.#s,
      pending: this.#pending.map((p) => ({ event: p.event, args: p.args })),
      metrics: this.#metrics.snapshot(),
    });
  }

  #restore(saved: LoopState): void {
    const { pending, metrics, ...rest } = saved;
    Object.assign(this.#s, rest);
    this.#pending = pending.map((p) => ({ event: p.event, args: p.args, tool: this.#tools.get(p.event.tool_name) }));
    this.#metrics.restore(metrics);
    // A loop cut off by the process stopping is paused: `run()` carries on from the saved history.
    if (saved.status === 'running') this.#s.status = 'paused';
    this.#terminal.announce(
      '[The sandbox was paused and resumed (or restarted): this is a new shell session in the workspace. Files are kept; the working directory, exported variables and background processes of the previous session are gone.]',
    );
  }

  #assertOpen(): void {
    if (this.#closed) throw new AgentStateError('The conversation is closed.');
  }

  #assertStarted(): void {
    this.#assertOpen();
    if (!this.#started) throw new AgentStateError('Call start() first.');
  }
}
