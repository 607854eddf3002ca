/**
 * The sandbox's side of conversations: it turns the control plane's commands into agent sessions.
 * `start_conversation` fetches the conversation's start configuration, prepares the repository
 * (clone with the provider token, setup script, git hooks), starts an AgentSession and reports each
 * step; the other commands drive the running session. Events go back through an EventSink.
 * A session's state lives under the workspace's state folder, so after a pause/resume (a new
 * process on the same workspace) `restore()` brings every conversation back where it was.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventSink } from '#sandbox/agent/event-sink.ts';
import type { AgentEvent } from '#sandbox/agent/events.ts';
import { secretMasker } from '#sandbox/agent/mask.ts';
import { AgentSession } from '#sandbox/agent/session.ts';
import { startConfigSecrets } from '#sandbox/secret-forms.ts';
import { renewingKey } from '#sandbox/agent/llm-credential.ts';
import type { ConversationReport, ExecutionStatus } from '#shared/protocol.ts';
import type { BridgeClient } from '#sandbox/bridge-client.ts';
import { ReportQueue } from '#sandbox/report-queue.ts';

export interface RunnerOptions {
  /** The control plane, through the sandbox's one client of it (checked in). */
  bridge: BridgeClient;
  workspaceDir: string;
  /** Agent activity: keeps the sandbox from being paused as idle. */
  markActive: () => void;
  log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

interface Running {
  session: AgentSession;
  sink: EventSink;
}

const SETUP_TIMEOUT_MS = 10 * 60_000;

function run(
  cmd: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        cwd: options.cwd,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? options.cwd,
          GIT_TERMINAL_PROMPT: '0',
          ...options.env,
        },
        timeout: options.timeoutMs ?? 300_000,
        maxBuffer: 8 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

const lastLines = (text: string, n = 3) => text.trim().split('\n').slice(-n).join(' / ').slice(0, 500);

/** What a status report carries (`POST .../webhooks/{sandbox}/conversations`). */
type ReportFields = Omit<ConversationReport, 'conversation_id'>;

export class ConversationRunner {
  private readonly running = new Map<string, Running>();
  /** Per conversation, commands run one after another (a message waits for its start). */
  private readonly chains = new Map<string, Promise<void>>();
  /** Per conversation, its status reports on their way (see ReportQueue). */
  private readonly reports = new Map<string, ReportQueue<ReportFields>>();
  /** Per conversation, execution statuses waiting for their events' delivery before they are reported, in order. */
  private readonly afterDelivery = new Map<string, Promise<void>>();
  private readonly stateDir: string;

  constructor(private readonly o: RunnerOptions) {
    this.stateDir = join(o.workspaceDir, '.sandbox-state', 'conversations');
  }

  /** The command handlers to register with the sandbox program. They return at once; work runs in order per conversation. */
  handlers(): Record<string, (command: { type: string; payload: unknown }) => Promise<void>> {
    const on =
      (fn: (cid: string, p: Record<string, unknown>) => Promise<void>) => async (command: { payload: unknown }) => {
        const p = (command.payload ?? {}) as Record<string, unknown>;
        const cid = String(p.conversation_id ?? '');
        if (!/^[0-9a-f]{32}$/.test(cid)) throw new Error('command without a valid conversation_id');
        this.enqueue(cid, () => fn(cid, p));
      };
    return {
      start_conversation: on((cid) => this.start(cid, false)),
      send_message: on(async (cid, p) => {
        const message = p.message as { content: never[]; run?: boolean };
        await this.session(cid).sendMessage({ content: message.content, run: false });
        if (message.run !== false) this.background(cid, this.session(cid).run());
      }),
      pause_conversation: on((cid) => this.session(cid).pause()),
      run_conversation: on(async (cid) => this.background(cid, this.session(cid).run())),
      respond_to_confirmation: on(async (cid, p) =>
        this.background(
          cid,
          this.session(cid).respondToConfirmation({
            accept: Boolean(p.accept),
            reason: (p.reason as string | null) ?? undefined,
          }),
        ),
      ),
    };
  }

  /** Brings back the conversations this workspace held before the sandbox was paused. */
  async restore(): Promise<void> {
    if (!existsSync(this.stateDir)) return;
    for (const cid of readdirSync(this.stateDir)) {
      if (/^[0-9a-f]{32}$/.test(cid) && existsSync(join(this.stateDir, cid, 'ready')))
        this.enqueue(cid, () => this.start(cid, true));
    }
  }

  /** Saves and closes every session, delivering the events still queued. */
  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
    await this.reported();
    for (const { session } of this.running.values()) await session.close().catch(() => undefined);
    // What closing the sessions emitted (a pause's status) is delivered and reported before the sinks close.
    await this.reported();
    for (const { sink } of this.running.values()) await sink.close().catch(() => undefined);
    this.running.clear();
  }

  /** Resolves when every queued command has been handled (for tests and shutdown). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
    await this.reported();
  }

  /** Every status report made so far answered, those waiting for their events' delivery included. */
  private async reported(): Promise<void> {
    await Promise.allSettled([...this.afterDelivery.values()]);
    await Promise.allSettled([...this.reports.values()].map((r) => r.settled()));
  }

  /** Reports `fields` once `delivered` (their events' post) settles, after the statuses reported before them. */
  private reportAfterDelivery(cid: string, delivered: Promise<void>, fields: ReportFields): void {
    const previous = this.afterDelivery.get(cid) ?? Promise.resolve();
    const next = Promise.all([previous, delivered.catch(() => undefined)]).then(() => {
      void this.reportInOrder(cid, fields);
    });
    this.afterDelivery.set(cid, next);
    void next.then(() => {
      if (this.afterDelivery.get(cid) === next) this.afterDelivery.delete(cid);
    });
  }

  private enqueue(cid: string, work: () => Promise<void>): void {
    const next = (this.chains.get(cid) ?? Promise.resolve())
      .then(work)
      .catch((err: unknown) =>
        this.o.log('error', 'Conversation command failed', { conversationId: cid, error: (err as Error).message }),
      );
    this.chains.set(cid, next);
  }

  /** A loop runs on its own; its outcome shows as events and status reports. */
  private background(cid: string, loop: Promise<void>): void {
    loop.catch((err: unknown) =>
      this.o.log('error', 'Agent loop failed', { conversationId: cid, error: (err as Error).message }),
    );
  }

  private session(cid: string): AgentSession {
    const r = this.running.get(cid);
    if (!r) throw new Error(`conversation ${cid} is not running in this sandbox`);
    return r.session;
  }

  private report(cid: string, fields: ReportFields): Promise<void> {
    return this.o.bridge.report({ conversation_id: cid, ...fields }).then(
      () => undefined,
      (err: unknown) =>
        this.o.log('warn', 'Status report failed', { conversationId: cid, error: (err as Error).message }),
    );
  }

  /** Queues a status report (see ReportQueue): the start flow and the agent go on while it travels. */
  private reportInOrder(cid: string, fields: ReportFields): Promise<void> {
    let queue = this.reports.get(cid);
    if (!queue) {
      queue = new ReportQueue((f) => this.report(cid, f));
      this.reports.set(cid, queue);
    }
    return queue.push(fields);
  }

  private async start(cid: string, restoring: boolean): Promise<void> {
    if (this.running.has(cid)) return; // a redelivered command
    const config = await this.o.bridge.startConfig(cid);
    const stateDir = join(this.stateDir, cid);
    mkdirSync(stateDir, { recursive: true });
    const secretEnv = config.secrets;
    const fail = async (detail: string) => {
      this.o.log('warn', 'Conversation start failed', { conversationId: cid, detail });
      await this.reportInOrder(cid, { start_task_status: 'ERROR', detail, execution_status: 'error' });
    };

    let dir = this.o.workspaceDir;
    if (!restoring) void this.reportInOrder(cid, { start_task_status: 'PREPARING_REPOSITORY' });
    if (config.repository) {
      const repo = config.repository;
      dir = join(this.o.workspaceDir, repo.full_name.split('/').at(-1)!);
      if (!existsSync(join(dir, '.git'))) {
        const args = [
          ...(repo.auth_header ? ['-c', `http.extraHeader=${repo.auth_header}`] : []),
          'clone',
          '-q',
          ...(repo.branch ? ['--branch', repo.branch] : []),
          repo.clone_url,
          dir,
        ];
        const cloned = await run('git', args, { cwd: this.o.workspaceDir });
        if (cloned.code !== 0) {
          const why = lastLines(cloned.output).replaceAll(repo.auth_header ?? '\u0000', '***');
          return fail(
            `Could not clone ${repo.full_name}${repo.branch ? ` (branch ${repo.branch})` : ''} from ${repo.clone_url}: ${why || `git exited with ${cloned.code}`}${repo.auth_header ? '' : ` (no ${repo.provider} token in your settings' secrets_store)`}`,
          );
        }
      }
    }
    const init = !config.repository && !existsSync(join(dir, '.git'));
    const identity =
      config.git_identity.name && config.git_identity.email
        ? { name: config.git_identity.name, email: config.git_identity.email }
        : { name: 'openhands', email: 'openhands@all-hands.dev' };
    // One bash for git's steps: a spawn from this process costs more than git's from a shell. The
    // identity goes in as arguments, never as script text.
    await run(
      'bash',
      [
        '-c',
        `set -e; ${init ? 'git init -q; ' : ''}git config user.name "$1"; git config user.email "$2"`,
        'bash',
        identity.name,
        identity.email,
      ],
      { cwd: dir },
    );

    if (!restoring) {
      void this.reportInOrder(cid, { start_task_status: 'RUNNING_SETUP_SCRIPT' });
      if (existsSync(join(dir, '.openhands', 'setup.sh'))) {
        const setup = await run('bash', ['.openhands/setup.sh'], {
          cwd: dir,
          env: secretEnv,
          timeoutMs: SETUP_TIMEOUT_MS,
        });
        if (setup.code !== 0)
          return fail(`.openhands/setup.sh failed with exit code ${setup.code}: ${lastLines(setup.output)}`);
      }
      void this.reportInOrder(cid, { start_task_status: 'SETTING_UP_GIT_HOOKS' });
      if (existsSync(join(dir, '.openhands', 'pre-commit.sh'))) {
        const hook = join(dir, '.git', 'hooks', 'pre-commit');
        mkdirSync(join(dir, '.git', 'hooks'), { recursive: true });
        writeFileSync(
          hook,
          '#!/bin/sh\n# Installed by the sandbox from .openhands/pre-commit.sh\nexec bash "$(git rev-parse --show-toplevel)/.openhands/pre-commit.sh" "$@"\n',
        );
        chmodSync(hook, 0o755);
      }
      void this.reportInOrder(cid, { start_task_status: 'STARTING_CONVERSATION' });
    }

    const seqFile = join(stateDir, 'event-seq');
    const sink = new EventSink({
      deliver: (firstSeq, batch, timeoutMs) => this.o.bridge.postEvents(cid, firstSeq, batch, timeoutMs),
      onError: (message) => this.o.log('warn', 'Event delivery', { conversationId: cid, message }),
      // Numbering continues across a pause/resume: the state folder survives it.
      firstSeq: existsSync(seqFile) ? Number(readFileSync(seqFile, 'utf8')) || 1 : 1,
      onDelivered: (next) => writeFileSync(seqFile, String(next)),
    });
    // The session masks what it knows (custom secrets, the LLM key); this also covers the git token and the MCP secrets.
    let maskAll = secretMasker(startConfigSecrets(config));
    const renewedCredentials: string[] = [];
    // A renewed gateway credential is masked like the first: in events here, and by the session in tool results.
    const masksRenewed = (credential: string) => {
      renewedCredentials.push(credential);
      maskAll = secretMasker([...startConfigSecrets(config), ...renewedCredentials]);
      session.addSecret(credential);
    };
    const emit = async (unmasked: AgentEvent[]) => {
      const events = maskAll(unmasked);
      this.o.markActive();
      await sink.push(events);
      for (const e of events) {
        if (e.kind !== 'ConversationStateUpdateEvent') continue;
        const { key, value } = e as unknown as { key: string; value: unknown };
        if (key === 'execution_status') {
          // Status changes are rare and matter to clients: their events are posted at once and the status
          // reported after them, in order; the agent goes on meanwhile (its next LLM call does not wait for the post).
          this.reportAfterDelivery(cid, sink.flush(), { execution_status: value as ExecutionStatus });
        } else if (key === 'metrics' && value && typeof value === 'object') {
          const m = value as Record<string, unknown>;
          void this.reportInOrder(cid, {
            metrics: {
              accumulated_cost: Number(m.accumulated_cost ?? 0),
              prompt_tokens: Number(m.prompt_tokens ?? 0),
              completion_tokens: Number(m.completion_tokens ?? 0),
              max_budget_per_task: (m.max_budget_per_task as number | null) ?? config.max_budget_per_task,
            },
          });
        }
      }
    };
    const session = new AgentSession({
      conversationId: cid,
      workspaceDir: dir,
      llm: {
        model: config.llm.model,
        apiKey: config.llm.api_key,
        baseUrl: config.llm.base_url ?? undefined,
        ...(config.llm.api ? { api: config.llm.api } : {}),
        // A platform model's gateway credential lasts an hour: fetched again from the start configuration before it ends.
        ...(config.llm.api_key.startsWith('acsl.')
          ? {
              renewKey: renewingKey(
                config.llm.api_key,
                async () => (await this.o.bridge.startConfig(cid)).llm.api_key,
                Date.now,
                masksRenewed,
              ),
            }
          : {}),
      },
      maxIterations: config.max_iterations,
      maxBudgetPerTask: config.max_budget_per_task,
      confirmationMode: config.confirmation_mode,
      // Older control planes send none of these: the defaults are the default agent, no analyzer, the condenser on.
      agent: config.agent ?? (config.agent_type === 'plan' ? 'PlanningAgent' : 'CodeActAgent'),
      securityAnalyzer: config.security_analyzer ?? null,
      condenser: { enabled: config.condenser?.enabled ?? true, maxSize: config.condenser?.max_size ?? null },
      search: config.search
        ? { apiKey: config.search.api_key, baseUrl: process.env.SEARCH_API_BASE_URL ?? null }
        : null,
      language: config.language ?? null,
      instructions: config.instructions ?? undefined,
      mcpConfig: config.mcp_config,
      secrets: secretEnv,
      gitIdentity: identity,
      emit,
      stateFile: join(stateDir, 'agent.json'),
    });
    try {
      await session.start();
    } catch (err) {
      return fail(`The agent could not start: ${(err as Error).message}`);
    }
    this.running.set(cid, { session, sink });
    if (!restoring) {
      writeFileSync(join(stateDir, 'ready'), new Date().toISOString());
      void this.reportInOrder(cid, { start_task_status: 'READY' });
      if (config.replay_json) {
        let trajectory: unknown;
        try {
          trajectory = JSON.parse(config.replay_json);
        } catch {
          trajectory = config.replay_json; // the session reports an unreadable trajectory as an error
        }
        await session.replay(trajectory, { run: false });
      }
      if (config.initial_message) {
        await session.sendMessage({ content: config.initial_message.content as never[], run: false });
        if (config.initial_message.run) this.background(cid, session.run());
      } else if (config.replay_json) {
        this.background(cid, session.run());
      }
    }
    // A restored loop that the pause cut off comes back `paused`: `run` or a new message continues it.
    this.o.log('info', restoring ? 'Conversation restored' : 'Conversation ready', {
      conversationId: cid,
      status: session.status,
    });
  }
}
