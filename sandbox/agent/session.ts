import { APICallError, generateText, jsonSchema, RetryError, tool, type LanguageModel, type ModelMessage, type ToolSet, type UserContent } from 'ai';
import type { McpConfig } from '#shared/settings/model.ts';
import { EventFactory, type AgentEvent, type Content, type EventOf, type EventSource, type ExecutionStatus, type Metrics } from '#sandbox/agent/events.ts';
import { LlmConfigError, MetricsCounter, resolveModel, type LlmConfig } from '#sandbox/agent/llm.ts';
import { secretMasker } from '#sandbox/agent/mask.ts';
import { McpHub } from '#sandbox/agent/mcp.ts';
import { readState, reviveImages, writeState, type SavedState } from '#sandbox/agent/state-file.ts';
import { loadMicroagents, triggered, type Microagent } from '#sandbox/agent/microagents.ts';
import { parseTrajectory, TrajectoryError, type ReplayStep } from '#sandbox/agent/replay.ts';
import { ShellRunner } from '#sandbox/agent/tools/bash.ts';
import { FileEditor } from '#sandbox/agent/tools/editor.ts';
import { builtinTools, mcpAgentTool, type AgentTool, type ToolOutcome } from '#sandbox/agent/tools/toolset.ts';

export interface AgentSessionOptions {
  conversationId: string;
  /** The directory the agent works in; commands run there and file paths are confined to it. */
  workspaceDir: string;
  llm: LlmConfig & {
    /** Per model call, retries included (default 120 s). */
    timeoutMs?: number;
    /** Retries of a failed call (429, 5xx, network) with exponential back-off (default 2). */
    maxRetries?: number;
  };
  /** Model calls per task (a task starts with each user message); null: the default, 100. */
  maxIterations?: number | null;
  /** US dollars; the loop stops once the conversation's accumulated cost reaches it. null: no limit. */
  maxBudgetPerTask?: number | null;
  /** Ask before each action (think and finish excepted). */
  confirmationMode?: boolean;
  /** Added to the system prompt: conversation_instructions, repository and microagent context. */
  instructions?: string;
  mcpConfig?: McpConfig | null;
  /** Custom secrets: name -> value. Commands get them as environment; events never show the values. */
  secrets?: Record<string, string>;
  gitIdentity?: { name: string; email: string } | null;
  /** Receives events in order; awaited, so a slow receiver slows the agent instead of losing events. */
  emit: (events: AgentEvent[]) => Promise<void>;
  /** Defaults: 120 s per command (the model may ask for up to 600 s), 30,000 characters of output. */
  commandTimeoutMs?: number;
  maxCommandTimeoutMs?: number;
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

/** A call that does not fit the session's state (e.g. a confirmation when nothing waits for one). */
export class AgentStateError extends Error {}

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
// Variables of the sandbox program's own environment that commands may see; nothing else leaks
// (the program's environment holds its session key for the control plane).
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TERM', 'USER', 'LOGNAME', 'SHELL', 'TMPDIR', 'TZ'];

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
  readonly #mask: <T>(v: T) => T;
  readonly #metrics: MetricsCounter;
  readonly #shell = new ShellRunner();
  readonly #history: ModelMessage[] = [];
  /** User messages that arrived while a step was under way; they join the history between steps. */
  readonly #inbox: ModelMessage[] = [];
  #tools = new Map<string, AgentTool>();
  #toolSet: ToolSet = {};
  #systemPrompt = '';
  #model: LanguageModel | null = null;
  #modelError: string | null = null;
  #mcp: McpHub | null = null;
  #status: ExecutionStatus = 'idle';
  #pending: PendingAction[] = [];
  #loop: Promise<void> | null = null;
  #pauseRequested = false;
  #llmAbort: AbortController | null = null;
  #iterations = 0;
  #recent: string[] = [];
  #microagents: Microagent[] = [];
  #started = false;
  #emitting: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: AgentSessionOptions) {
    this.#o = options;
    this.conversationId = options.conversationId;
    this.#mask = secretMasker([...Object.values(options.secrets ?? {}), ...(options.llm.apiKey ? [options.llm.apiKey] : [])]);
    this.#metrics = new MetricsCounter(options.llm, options.maxBudgetPerTask ?? null);
  }

  get status(): ExecutionStatus {
    return this.#status;
  }

  get metrics(): Metrics {
    return this.#metrics.snapshot();
  }

  /** Connects the MCP servers (a failing one is reported, not fatal), then announces the prompt and tools. */
  async start(): Promise<void> {
    if (this.#started) throw new AgentStateError('The session is already started.');
    this.#started = true;
    let saved: SavedState | null = null;
    const startErrors: AgentEvent[] = [];
    try {
      saved = this.#o.stateFile ? readState(this.#o.stateFile) : null;
    } catch (err) {
      startErrors.push(this.#event('AgentErrorEvent', 'environment', { error: `The saved conversation state could not be read, so the agent starts afresh: ${(err as Error).message}`, tool_name: null, tool_call_id: null }));
    }
    if (this.#o.loadMicroagents !== false) this.#microagents = await loadMicroagents(this.#o.workspaceDir);
    try {
      this.#model = resolveModel(this.#o.llm);
    } catch (err) {
      if (!(err instanceof LlmConfigError)) throw err;
      this.#modelError = err.message;
    }
    const builtin = builtinTools({
      workspaceDir: this.#o.workspaceDir,
      shell: this.#shell,
      editor: new FileEditor(this.#o.workspaceDir),
      commandEnv: () => this.#commandEnv(),
      commandTimeoutMs: this.#o.commandTimeoutMs ?? 120_000,
      maxCommandTimeoutMs: this.#o.maxCommandTimeoutMs ?? 600_000,
      maxOutputChars: this.#o.maxOutputChars ?? 30_000,
    });
    if (this.#o.mcpConfig) {
      this.#mcp = await McpHub.connect(this.#o.mcpConfig, {
        cwd: this.#o.workspaceDir,
        reservedNames: builtin.map((t) => t.name),
        connectTimeoutMs: MCP_CONNECT_TIMEOUT_MS,
        onServerError: (server, message) =>
          startErrors.push(this.#event('AgentErrorEvent', 'environment', { error: `MCP server ${server} is unavailable: ${message}`, tool_name: null, tool_call_id: null })),
      });
    }
    const all = [...builtin, ...(this.#mcp?.tools.map((t) => mcpAgentTool(t, MCP_CALL_TIMEOUT_MS)) ?? [])];
    this.#tools = new Map(all.map((t) => [t.name, t]));
    this.#toolSet = Object.fromEntries(
      all.map((t) => [t.name, tool({ description: t.description, inputSchema: 'jsonSchema' in t.input ? jsonSchema(t.input.jsonSchema) : t.input })]),
    );
    this.#systemPrompt = this.#buildSystemPrompt();
    await this.#emit(
      this.#event('SystemPromptEvent', 'agent', { system_prompt: { type: 'text', text: this.#systemPrompt }, tools: all.map((t) => ({ name: t.name, description: t.description })) }),
      ...startErrors,
    );
    if (saved) this.#restore(saved);
    if (this.#modelError) await this.#fail(this.#modelError);
    else if (saved) await this.#setStatus(this.#status, true);
    else await this.#setStatus('idle');
  }

  /** Records a user message (text and images) and, with `run`, starts the loop; resolves when it stops. */
  async sendMessage(message: UserMessage): Promise<void> {
    this.#assertOpen();
    if (!this.#started) throw new AgentStateError('Call start() first.');
    const content = toUserContent(message.content);
    const text = message.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    const activated = triggered(this.#microagents, text);
    for (const a of activated) content.push({ type: 'text', text: `<EXTRA_INFO>\nThe following information comes from the repository microagent "${a.name}", triggered by a keyword of this message:\n${a.content}\n</EXTRA_INFO>` });
    await this.#emit(
      this.#event('MessageEvent', 'user', { llm_message: { role: 'user', content: message.content }, ...(activated.length ? { activated_microagents: activated.map((a) => a.name) } : {}) }),
    );
    this.#inbox.push({ role: 'user', content });
    this.#iterations = 0;
    this.#recent = [];
    this.#save();
    if (this.#status === 'finished' || this.#status === 'stuck' || this.#status === 'error') await this.#setStatus('idle');
    if (message.run) await this.run();
  }

  /**
   * Starts the loop (or returns the running one) and resolves when it stops. With an action waiting
   * for confirmation it only restores that state; a finished or stuck agent waits for a new message.
   */
  run(): Promise<void> {
    this.#assertOpen();
    if (!this.#started) throw new AgentStateError('Call start() first.');
    if (this.#loop) return this.#loop;
    if (this.#pending.length) {
      return this.#status === 'paused' ? this.#setStatus('waiting_for_confirmation') : Promise.resolve();
    }
    if ((this.#status === 'finished' || this.#status === 'stuck') && !this.#inbox.length) return Promise.resolve();
    return this.#startLoop(() => this.#step());
  }

  /**
   * Stops the loop after the action under way (an LLM call under way is abandoned, to be made again
   * on `run`). Resolves once the loop has stopped.
   */
  async pause(): Promise<void> {
    this.#assertOpen();
    await this.#emit(this.#event('PauseEvent', 'user', {}));
    if (this.#loop) {
      this.#pauseRequested = true;
      this.#llmAbort?.abort();
      await this.#loop;
    } else if (this.#status === 'idle' || this.#status === 'waiting_for_confirmation') {
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
      const results = this.#invalidResults;
      this.#invalidResults = [];
      for (const p of pending) {
        await this.#emit(
          this.#event('UserRejectObservation', 'user', { action_id: p.event.id, tool_name: p.event.tool_name, tool_call_id: p.event.tool_call_id, rejection_reason: reason }),
        );
        results.push(toolResult(p.event, `The user rejected this action: ${reason}`));
      }
      this.#history.push({ role: 'tool', content: results });
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
    this.#assertOpen();
    if (!this.#started) throw new AgentStateError('Call start() first.');
    if (this.#loop || this.#pending.length) throw new AgentStateError('The agent is running or waiting for a confirmation; a replay needs it stopped.');
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
          const content: Content[] = [{ type: 'text', text: step.text }, ...(step.imageUrls.length ? [{ type: 'image' as const, image_urls: step.imageUrls }] : [])];
          await this.#emit(this.#event('MessageEvent', step.role === 'user' ? 'user' : 'agent', { llm_message: { role: step.role, content } }));
          this.#history.push(step.role === 'user' ? { role: 'user', content: toUserContent(content) } : { role: 'assistant', content: step.text });
          continue;
        }
        const call = { toolCallId: `replay_${++n}`, toolName: step.toolName, input: step.args };
        const event = this.#actionEvent(call, []);
        await this.#emit(event);
        this.#history.push({ role: 'assistant', content: [{ type: 'tool-call', ...call }] });
        await this.#execute([{ event, tool: this.#tools.get(step.toolName), args: step.args }], { detectStuck: false });
      }
      return 'stop';
    });
    if (this.#status === 'running') await this.#setStatus('idle');
    if (options.run && this.#status === 'idle') await this.run();
  }

  /** Stops everything: the loop, commands still running in the background, MCP servers. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#pauseRequested = true;
    this.#llmAbort?.abort();
    this.#closed = true;
    this.#shell.killAll();
    await this.#loop?.catch(() => undefined);
    this.#shell.killAll();
    await this.#mcp?.close();
    await this.#emitting;
  }

  // --- the loop ------------------------------------------------------------------------------------

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
        if (this.#pauseRequested && !this.#closed && this.#status === 'running') await this.#setStatus('paused');
      } catch (err) {
        await this.#fail(`The agent failed: ${(err as Error).message}`);
      } finally {
        this.#loop = null;
      }
    })();
    this.#loop = loop;
    return loop;
  }

  /** One iteration: limits, one model call, then its actions (or a stop for confirmation). */
  async #step(): Promise<'continue' | 'stop'> {
    if (this.#pauseRequested) return 'stop';
    if (this.#inbox.length) this.#history.push(...this.#inbox.splice(0));
    if (!this.#model) {
      await this.#fail(this.#modelError ?? 'No model is configured.');
      return 'stop';
    }
    const maxIterations = this.#o.maxIterations ?? DEFAULT_MAX_ITERATIONS;
    if (this.#iterations >= maxIterations) {
      return this.#stopForLimit('MaxIterationsReached', `The agent stopped: it reached the maximum number of iterations (max_iterations = ${maxIterations}). Send a message to continue.`);
    }
    const budget = this.#o.maxBudgetPerTask;
    if (budget != null && this.#metrics.cost >= budget) {
      return this.#stopForLimit(
        'MaxBudgetReached',
        `The agent stopped: the conversation has cost $${this.#metrics.cost.toFixed(4)}, which reaches the budget (max_budget_per_task = $${budget}).`,
      );
    }
    this.#iterations += 1;
    const result = await this.#callModel(this.#model);
    if (result === 'paused' || result === 'failed') return 'stop';

    const text = result.text.trim();
    const calls = result.toolCalls;
    if (!calls.length) {
      this.#history.push({ role: 'assistant', content: result.text });
      if (text) await this.#emit(this.#event('MessageEvent', 'agent', { llm_message: { role: 'assistant', content: [{ type: 'text', text }] } }));
      await this.#setStatus('finished');
      return 'stop';
    }
    this.#history.push({
      role: 'assistant',
      content: [...(text ? [{ type: 'text' as const, text }] : []), ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input }))],
    });

    const pending: PendingAction[] = [];
    const invalid: { toolCallId: string; toolName: string; message: string }[] = [];
    for (const [i, c] of calls.entries()) {
      if ('invalid' in c && c.invalid) {
        invalid.push({ toolCallId: c.toolCallId, toolName: c.toolName, message: (c.error as Error | undefined)?.message ?? 'invalid tool call' });
        continue;
      }
      const event = this.#actionEvent(c, i === 0 && text ? [{ type: 'text', text }] : []);
      pending.push({ event, tool: this.#tools.get(c.toolName), args: c.input as Record<string, unknown> });
    }
    const invalidResults = [];
    for (const bad of invalid) {
      const error = this.#tools.has(bad.toolName)
        ? `Invalid arguments for tool ${bad.toolName}: ${bad.message}`
        : `Tool "${bad.toolName}" does not exist. Available tools: ${[...this.#tools.keys()].join(', ')}.`;
      await this.#emit(this.#event('AgentErrorEvent', 'agent', { error, tool_name: bad.toolName, tool_call_id: bad.toolCallId }));
      invalidResults.push({ type: 'tool-result' as const, toolCallId: bad.toolCallId, toolName: bad.toolName, output: { type: 'text' as const, value: `ERROR: ${error}` } });
    }
    await this.#emit(...pending.map((p) => p.event));
    if (!pending.length) {
      this.#history.push({ role: 'tool', content: invalidResults });
      return 'continue';
    }
    this.#invalidResults = invalidResults;
    const needsConfirmation = this.#o.confirmationMode && pending.some((p) => p.tool && p.tool.name !== 'think' && p.tool.name !== 'finish');
    if (needsConfirmation) {
      this.#pending = pending;
      await this.#setStatus('waiting_for_confirmation');
      return 'stop';
    }
    return this.#execute(pending);
  }

  /** Results for invalid calls of the step whose actions are pending: they join those actions' results. */
  #invalidResults: Extract<ModelMessage, { role: 'tool' }>['content'] = [];

  async #callModel(model: LanguageModel) {
    const abort = new AbortController();
    this.#llmAbort = abort;
    const timeoutMs = this.#o.llm.timeoutMs ?? 120_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const result = await generateText({
        model,
        system: this.#systemPrompt,
        messages: this.#history,
        tools: this.#toolSet,
        maxRetries: this.#o.llm.maxRetries ?? 2,
        abortSignal: AbortSignal.any([abort.signal, timeout]),
      });
      this.#metrics.add(result.usage);
      await this.#emit(this.#event('ConversationStateUpdateEvent', 'environment', { key: 'metrics', value: this.#metrics.snapshot() }));
      return result;
    } catch (err) {
      if (abort.signal.aborted && this.#pauseRequested) {
        this.#iterations -= 1;
        return 'paused' as const;
      }
      await this.#fail(timeout.aborted ? `The LLM did not answer within ${timeoutMs / 1000} s (model ${this.#o.llm.model}).` : describeLlmError(err, this.#o.llm.model));
      return 'failed' as const;
    } finally {
      this.#llmAbort = null;
    }
  }

  /** Runs actions in order, tells the model their results, and says whether the loop goes on. */
  async #execute(actions: PendingAction[], options: { detectStuck?: boolean } = {}): Promise<'continue' | 'stop'> {
    const results = this.#invalidResults;
    this.#invalidResults = [];
    let finished = false;
    let stuck = false;
    for (const a of actions) {
      if (this.#closed) return 'stop';
      const outcome = await this.#runAction(a);
      results.push(toolResult(a.event, this.#mask(outcome.text)));
      if (outcome.finish) finished = true;
      if (options.detectStuck !== false && this.#repeats(a, outcome)) stuck = true;
    }
    this.#history.push({ role: 'tool', content: results });
    if (finished) {
      await this.#setStatus('finished');
      return 'stop';
    }
    if (stuck) {
      const n = this.#o.stuckThreshold ?? 4;
      await this.#emit(this.#event('ConversationErrorEvent', 'environment', { code: 'AgentStuckInLoop', detail: `The agent repeated the same action with the same result ${n} times in a row, so it was stopped. Send a message to steer it.` }));
      await this.#setStatus('stuck');
      return 'stop';
    }
    return 'continue';
  }

  async #runAction(a: PendingAction): Promise<ToolOutcome> {
    const { event } = a;
    const errorOutcome = async (error: string): Promise<ToolOutcome> => {
      await this.#emit(this.#event('AgentErrorEvent', 'agent', { error, tool_name: event.tool_name, tool_call_id: event.tool_call_id }));
      return { observation: { kind: 'AgentError' }, text: `ERROR: ${error}`, isError: true };
    };
    if (!a.tool) return errorOutcome(`Tool "${event.tool_name}" does not exist. Available tools: ${[...this.#tools.keys()].join(', ')}.`);
    let outcome: ToolOutcome;
    try {
      outcome = await a.tool.run(a.args);
    } catch (err) {
      const msg = err instanceof Error && err.name === 'ZodError' ? `Invalid arguments for tool ${a.tool.name}: ${err.message}` : `Tool ${a.tool.name} failed: ${(err as Error).message}`;
      return errorOutcome(msg);
    }
    await this.#emit(this.#event('ObservationEvent', 'environment', { observation: outcome.observation, action_id: event.id, tool_name: event.tool_name, tool_call_id: event.tool_call_id }));
    return outcome;
  }

  /** Whether this action and result complete a run of identical ones as long as the stuck threshold. */
  #repeats(a: PendingAction, outcome: ToolOutcome): boolean {
    const n = this.#o.stuckThreshold ?? 4;
    this.#recent.push(JSON.stringify([a.event.tool_name, a.args, outcome.text]));
    if (this.#recent.length > n) this.#recent.shift();
    return this.#recent.length === n && this.#recent.every((s) => s === this.#recent[0]);
  }

  async #stopForLimit(code: string, detail: string): Promise<'stop'> {
    await this.#emit(this.#event('ConversationErrorEvent', 'environment', { code, detail }));
    await this.#setStatus('error');
    return 'stop';
  }

  // --- events and state ------------------------------------------------------------------------

  #actionEvent(call: { toolCallId: string; toolName: string; input: unknown }, thought: { type: 'text'; text: string }[]): EventOf<'ActionEvent'> {
    const args = (call.input ?? {}) as Record<string, unknown>;
    const t = this.#tools.get(call.toolName);
    const action = t ? t.action(args) : { kind: 'UnknownAction', ...args };
    return this.#event('ActionEvent', 'agent', { thought, action, tool_name: call.toolName, tool_call_id: call.toolCallId });
  }

  #event<K extends AgentEvent['kind']>(kind: K, source: EventSource, fields: Omit<EventOf<K>, 'kind' | 'id' | 'timestamp' | 'source'>): EventOf<K> {
    return this.#events.make(kind, source, fields);
  }

  /** Emits in order (each batch after the previous one was taken), every secret masked. */
  #emit(...events: AgentEvent[]): Promise<void> {
    if (!events.length) return this.#emitting;
    const masked = events.map((e) => this.#mask(e));
    this.#emitting = this.#emitting.then(() => this.#o.emit(masked)).catch((err) => {
      // The receiver owns delivery (the event sink retries); a failure there must not stop the agent.
      process.stderr.write(`agent: emitting events failed: ${(err as Error).message}\n`);
    });
    return this.#emitting;
  }

  async #setStatus(status: ExecutionStatus, announce = false): Promise<void> {
    if (this.#status === status && status !== 'idle' && !announce) return;
    this.#status = status;
    this.#save();
    await this.#emit(this.#event('ConversationStateUpdateEvent', 'environment', { key: 'execution_status', value: status }));
  }

  async #fail(error: string): Promise<void> {
    await this.#emit(this.#event('AgentErrorEvent', 'agent', { error, tool_name: null, tool_call_id: null }));
    await this.#setStatus('error');
  }

  /** Writes the state file (atomically: a reader never sees half of it). */
  #save(): void {
    const file = this.#o.stateFile;
    if (!file || !this.#started) return;
    const state: SavedState = {
      version: 1,
      status: this.#status,
      history: this.#history,
      inbox: this.#inbox,
      pending: this.#pending.map((p) => ({ event: p.event, args: p.args })),
      invalidResults: this.#invalidResults,
      iterations: this.#iterations,
      recent: this.#recent,
      metrics: this.#metrics.snapshot(),
    };
    writeState(file, state);
  }

  #restore(saved: SavedState): void {
    this.#history.push(...saved.history.map(reviveImages));
    this.#inbox.push(...saved.inbox.map(reviveImages));
    this.#pending = saved.pending.map((p) => ({ event: p.event, args: p.args, tool: this.#tools.get(p.event.tool_name) }));
    this.#invalidResults = saved.invalidResults;
    this.#iterations = saved.iterations;
    this.#recent = saved.recent;
    this.#metrics.restore(saved.metrics);
    // A loop cut off by the process stopping is paused: `run()` carries on from the saved history.
    this.#status = saved.status === 'running' ? 'paused' : saved.status;
  }

  #assertOpen(): void {
    if (this.#closed) throw new AgentStateError('The conversation is closed.');
  }

  #commandEnv(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const k of INHERITED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
    Object.assign(env, { PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0' }, this.#o.commandEnv);
    const git = this.#o.gitIdentity;
    if (git?.name) Object.assign(env, { GIT_AUTHOR_NAME: git.name, GIT_COMMITTER_NAME: git.name });
    if (git?.email) Object.assign(env, { GIT_AUTHOR_EMAIL: git.email, GIT_COMMITTER_EMAIL: git.email });
    Object.assign(env, this.#o.secrets);
    return env;
  }

  #buildSystemPrompt(): string {
    const secretNames = Object.keys(this.#o.secrets ?? {});
    const always = this.#microagents.filter((a) => !a.triggers.length);
    return [
      `You are a capable software engineer working as an autonomous coding agent. Your workspace is ${this.#o.workspaceDir}; work there.`,
      'You act only through your tools. Work in small verified steps: inspect before you change, run what you changed, and fix what fails.',
      'When the task is done (or cannot be done), call `finish` with a short summary for the user.',
      secretNames.length
        ? `These environment variables hold the user's secrets: ${secretNames.join(', ')}. Use them by name (e.g. "$${secretNames[0]}"); never print their values.`
        : '',
      ...always.map((a) => `Repository instructions (${a.name}):\n${a.content}`),
      this.#o.instructions?.trim() ?? '',
    ]
      .filter(Boolean)
      .join('\n\n');
  }
}

/** The model's form of a message; throws an AgentStateError for an image URL that is not a URL. */
function toUserContent(content: Content[]): Exclude<UserContent, string> {
  const image = (url: string) => {
    if (!URL.canParse(url)) throw new AgentStateError(`image_urls: "${url.slice(0, 100)}" is not a URL.`);
    return { type: 'image' as const, image: new URL(url) };
  };
  return content.flatMap((c): Exclude<UserContent, string> => (c.type === 'text' ? [{ type: 'text', text: c.text }] : c.image_urls.map(image)));
}

function toolResult(event: EventOf<'ActionEvent'>, text: string) {
  return { type: 'tool-result' as const, toolCallId: event.tool_call_id, toolName: event.tool_name, output: { type: 'text' as const, value: text } };
}

/** A sentence a person can act on, from whatever the AI SDK threw. */
export function describeLlmError(err: unknown, model: string): string {
  let e = err;
  let attempts = '';
  if (RetryError.isInstance(e)) {
    attempts = ` after ${e.errors.length} attempts`;
    e = e.lastError;
  }
  if (APICallError.isInstance(e)) {
    const status = e.statusCode;
    const hint =
      status === 401 || status === 403
        ? ' Check llm_api_key.'
        : status === 429
          ? ' The provider is rate-limiting or the quota is used up.'
          : status === undefined
            ? ` Check that llm_base_url (${e.url}) is reachable.`
            : '';
    return `LLM request for ${model} failed${attempts}${status ? ` (HTTP ${status})` : ''}: ${e.message}.${hint}`;
  }
  return `LLM request for ${model} failed${attempts}: ${(e as Error)?.message ?? String(e)}`;
}
