import type { ConversationStore, StartTaskStore } from '#shared/conversations/conversation-store.ts';
import { queued, startTaskRank, type ConversationRecord, type SandboxCaller } from '#shared/conversations/model.ts';
import { unmaskMcp, type McpSecrets } from '#shared/conversations/mcp-secrets.ts';
import type { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import { buildStartConfig } from '#shared/conversations/start-config.ts';
import { RateLimitedError, SequenceAheadError, type EventStore } from '#shared/events/event-store.ts';
import { invalidField, planLimit, tooManyRequests, unauthorized } from '#shared/http/errors.ts';
import type { Plan } from '#shared/plans/model.ts';
import { logger } from '#shared/logging.ts';
import {
  type AgentEventEnvelope,
  type ConversationReport,
  type StartConfig,
  type StartTaskStatus,
  startTaskStatuses,
} from '#shared/protocol.ts';
import type { SettingsService } from '#shared/settings/service.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';

/** What the start configuration of a platform model needs: the models, a credential, the gateway's URL. */
export interface PlatformStart {
  policy: PlatformLlmPolicy;
  credential(sandbox: SandboxCaller, conversation: ConversationRecord, budgetUsd: number | null): Promise<string>;
  gatewayUrl(): string;
}
import type { EventFeed } from '#shared/stream/feed.ts';
import type { AgentReport, AgentReports } from '#shared/usage/usage-store.ts';

/** The members of an agent's `metrics` state update the ledger keeps (the agent's cumulative count). */
interface AgentMetricsReport {
  model: string;
  llm_calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  accumulated_cost: number;
}
const count = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/** An agent's change of execution status (a `ConversationStateUpdateEvent` of key `execution_status`). */
const isExecutionStatusUpdate = (e: AgentEventEnvelope) =>
  (e as { kind?: unknown }).kind === 'ConversationStateUpdateEvent' &&
  (e as { key?: unknown }).key === 'execution_status';

/** An event's LLM usage report (a `ConversationStateUpdateEvent` of key `metrics`), when well formed; else undefined. */
export function agentMetricsOf(e: AgentEventEnvelope): AgentMetricsReport | undefined {
  const { kind, key, value } = e as { kind: string; key?: unknown; value?: unknown };
  if (kind !== 'ConversationStateUpdateEvent' || key !== 'metrics' || !value || typeof value !== 'object') return;
  const v = value as Record<string, unknown>;
  const cost = v.accumulated_cost;
  if (typeof v.model !== 'string' || v.model.length < 1 || v.model.length > 128) return;
  if (!count(v.llm_calls, 1e9) || !count(v.prompt_tokens, 1e15) || !count(v.completion_tokens, 1e15)) return;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || cost > 1e9) return;
  return {
    model: v.model,
    llm_calls: v.llm_calls,
    prompt_tokens: v.prompt_tokens,
    completion_tokens: v.completion_tokens,
    accumulated_cost: cost,
  };
}

/** How stale a sandbox's recorded activity may be before a bridge route writes it again (the idle pause counts in minutes). */
export const ACTIVITY_WRITE_MS = 30_000;

/** Statuses a report of `status` may move a task from: only earlier, unfinished ones. */
const before = (status: StartTaskStatus) =>
  startTaskStatuses.filter((s) => s !== 'READY' && s !== 'ERROR' && startTaskRank(s) < startTaskRank(status));

/**
 * The sandbox's side of conversations (the bridge routes): fetch a conversation's start configuration,
 * report progress and status, post events. Every call carries the sandbox's own key, and a sandbox
 * can touch only conversations placed on it (401 otherwise, as OpenHands answers).
 */
export class ConversationBridge {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly tasks: StartTaskStore,
    private readonly events: EventStore,
    private readonly settings: SettingsService,
    /** What the bridge uses of the sandbox service: a bridge route's agent activity, the pause at an event cap. */
    private readonly sandboxes: Pick<SandboxQueue, 'recordActivity' | 'enqueueCommand'>,
    private readonly versioned: VersionedConversationUpdate,
    private readonly feed: EventFeed,
    private readonly now: () => number = () => Date.now(),
    /**
     * The plan by name (its ingest limits): the sandbox's, the plan its organization was on when the
     * sandbox's current generation started; none: no limits (tests of the store's own rules).
     */
    private readonly planFor?: (name: string | undefined) => Plan,
    /** Platform models: their start configuration points the agent at the LLM gateway with a credential of its own. */
    private readonly platform?: PlatformStart,
    /** The ledger the agent's own LLM usage reports go to (informational; docs/billing.md); none: not kept. */
    private readonly agentUsage?: AgentReports,
  ) {}

  /**
   * The conversation, when `sandbox` (the caller, whose key the wrapper checked) is RUNNING and the
   * conversation is placed on it; 401 otherwise.
   */
  private async placed(
    sandbox: SandboxCaller | undefined,
    conversationId: string,
  ): Promise<{ conversation: ConversationRecord; caller: SandboxCaller }> {
    if (sandbox?.status !== 'RUNNING') throw unauthorized();
    const conversation = await this.conversations.get(sandbox.userId, conversationId);
    if (!conversation || conversation.sandbox_id !== sandbox.id) throw unauthorized();
    return { conversation, caller: sandbox };
  }

  /**
   * Agent activity from a bridge route: written when the stored time is older than ACTIVITY_WRITE_MS, so
   * a busy sandbox's event batches are not each a write (and two index updates) on its record.
   */
  private async touch(sandbox: SandboxCaller): Promise<void> {
    if (this.activityDue(sandbox)) await this.sandboxes.recordActivity(sandbox.id);
  }

  private activityDue(sandbox: SandboxCaller): boolean {
    return !sandbox.lastActivityAt || this.now() - Date.parse(sandbox.lastActivityAt) >= ACTIVITY_WRITE_MS;
  }

  async startConfig(sandbox: SandboxCaller | undefined, conversationId: string): Promise<StartConfig> {
    const { conversation } = await this.placed(sandbox, conversationId);
    const [task, settings] = await Promise.all([
      this.tasks.get(conversation.start_task_id),
      this.settings.resolve(conversation.userId),
    ]);
    if (!task || !settings) throw unauthorized();
    const request = { ...task.request };
    if (task.mcpSecretsSealed && request.mcp_config) {
      const secrets = JSON.parse(await this.settings.openFor(conversation.userId, task.mcpSecretsSealed)) as McpSecrets;
      request.mcp_config = unmaskMcp(request.mcp_config, secrets);
    }
    const config = buildStartConfig(conversation, request, settings, task.id);
    const model = this.platform?.policy.get(config.llm.model);
    if (model && this.platform && sandbox) {
      // The platform's key never enters the sandbox: the agent calls our gateway with a credential of
      // this conversation only, and the gateway calls the upstream with the key.
      config.llm = {
        model: model.model,
        api_key: await this.platform.credential(sandbox, conversation, config.max_budget_per_task),
        base_url: `${this.platform.gatewayUrl()}/llm/v1`,
        ...(model.provider === 'anthropic' ? { api: 'anthropic' as const } : {}),
      };
    }
    return config;
  }

  async report(sandbox: SandboxCaller | undefined, r: ConversationReport): Promise<{ success: true }> {
    const { conversation, caller } = await this.placed(sandbox, r.conversation_id);
    if (r.start_task_status) {
      const moved = await this.tasks.transition(
        conversation.start_task_id,
        before(r.start_task_status),
        r.start_task_status,
        {
          detail:
            r.start_task_status === 'ERROR'
              ? (r.detail ?? 'The sandbox reported an error without detail')
              : (r.detail ?? null),
        },
      );
      if (moved && r.start_task_status === 'ERROR')
        logger.warn('conversation.failed', { conversationId: conversation.id, detail: r.detail });
    }
    if (r.execution_status || r.metrics || r.title) {
      await this.versioned.update(conversation.userId, conversation.id, (rec) => ({
        ...(r.execution_status ? { execution_status: r.execution_status } : {}),
        ...(r.title ? { title: r.title } : {}),
        ...(r.metrics
          ? {
              metrics: {
                accumulated_cost: 0,
                prompt_tokens: 0,
                completion_tokens: 0,
                max_budget_per_task: null,
                ...rec.metrics,
                ...r.metrics,
              },
            }
          : {}),
      }));
    }
    await this.touch(caller);
    return { success: true };
  }

  async postEvents(
    sandbox: SandboxCaller | undefined,
    conversationId: string,
    firstSeq: number,
    events: AgentEventEnvelope[],
  ): Promise<{ success: true; added: number }> {
    if (sandbox?.status !== 'RUNNING') throw unauthorized();
    const ref = { userId: sandbox.userId, conversationId };
    // The counter (with the rate bucket) is read beside the placement check (a round trip less); nothing is written before both.
    const [{ conversation, caller }, head, plan] = await Promise.all([
      this.placed(sandbox, conversationId),
      this.events.head(ref),
      this.planFor?.(sandbox.plan),
    ]);
    // The agent's own usage report (a user's own key) goes into the ledger (three writes) at most as often as
    // activity is recorded, and at each execution status change (the run's last report, or the one kept
    // since); in between the latest rides on the bucket's write to the counter, no request of its own.
    const report = this.agentReportIn(caller, conversation, firstSeq, events);
    const statusChange = events.some(isExecutionStatusUpdate);
    const kept =
      statusChange && !report && head.agentReport ? (JSON.parse(head.agentReport) as AgentReport) : undefined;
    const recordNow = report && (!plan || statusChange || this.activityDue(caller));
    const limits = plan
      ? {
          eventsPerSecond: plan.events_per_sandbox_per_second,
          maxEvents: plan.max_events_per_conversation,
          ...(sandbox.orgId ? { orgId: sandbox.orgId } : {}),
          ...(report && !recordNow ? { agentReport: JSON.stringify(report) } : {}),
        }
      : undefined;
    // The organization's stored bytes as the sweeper last summed them: the cap holds within one sweep.
    if (plan && head.orgBytes !== undefined && head.orgBytes >= plan.max_event_bytes_per_org) {
      // Stopped once: the event goes after the committed end, which it moves (a stopped one stays as it is).
      if (conversation.execution_status !== 'error')
        await this.stopAtCap(conversation, head.lastSeq, head.lastSeq, {
          code: 'max_event_bytes_per_org',
          detail: `This organization's conversations hold its plan's maximum of ${plan.max_event_bytes_per_org} bytes of events; this conversation was stopped.`,
        });
      throw planLimit(
        'max_event_bytes_per_org',
        plan.max_event_bytes_per_org,
        head.orgBytes,
        `The organization's conversations hold its plan's maximum of ${plan.max_event_bytes_per_org} bytes of events; the conversation was stopped`,
      );
    }
    const { added, lastSeq, overCap } = await this.events
      .append(ref, firstSeq, events, head, limits)
      .catch((err: unknown) => {
        if (err instanceof SequenceAheadError) throw invalidField(['query', 'first_seq'], err.message, firstSeq);
        if (err instanceof RateLimitedError)
          throw tooManyRequests(
            `Too many events: at most ${plan!.events_per_sandbox_per_second} per second per conversation`,
            err.retryAfterMs / 1000,
          );
        throw err;
      });
    // Even when nothing was added: a retry may follow an attempt that stored the batch and died before telling.
    // The stream reads from the store, so a failed push costs a client nothing the next commit does not bring.
    await this.feed
      .committed(ref, lastSeq)
      .catch((err: unknown) =>
        logger.warn('stream.feed-failed', { conversationId: conversation.id, error: err as Error }),
      );
    // Only a call that committed some of the batch: a retry of it writes nothing (the next report is cumulative).
    const toRecord = recordNow ? report : kept;
    if (added > 0 && toRecord) await this.recordAgentReport(toRecord);
    await this.touch(caller);
    if (overCap && plan) {
      const max = plan.max_events_per_conversation;
      await this.stopAtCap(conversation, lastSeq, max, {
        code: 'max_events_per_conversation',
        detail: `This conversation reached its plan's maximum of ${max} events and was stopped. Start a new conversation to continue.`,
      });
      throw planLimit(
        'max_events_per_conversation',
        plan.max_events_per_conversation,
        lastSeq,
        `The conversation holds its plan's maximum of ${plan.max_events_per_conversation} events; it was stopped`,
      );
    }
    return { success: true, added };
  }

  /**
   * The agent's own report of its LLM usage in a batch (its last `metrics` state update: cumulative model,
   * calls, tokens, cost) for a user's own key, kept in the ledger as informational (docs/billing.md, "The
   * agent's own reports"): never billed, never in a limit. A platform model is skipped (its gateway counts
   * it, authoritatively). The conversation is the one the placement check found on this sandbox, so a
   * sandbox writes only its own conversations' reports, and only to the `agent*` members.
   */
  private agentReportIn(
    sandbox: SandboxCaller,
    conversation: ConversationRecord,
    firstSeq: number,
    events: AgentEventEnvelope[],
  ): AgentReport | undefined {
    if (!this.agentUsage || !sandbox.orgId) return;
    let found: { seq: number; metrics: AgentMetricsReport } | undefined;
    for (const [i, e] of events.entries()) {
      const metrics = agentMetricsOf(e);
      if (metrics) found = { seq: firstSeq + i, metrics };
    }
    if (!found || this.platform?.policy.get(found.metrics.model)) return;
    const at = new Date(this.now()).toISOString();
    const m = found.metrics;
    return {
      orgId: sandbox.orgId,
      userId: conversation.userId,
      conversationId: conversation.id,
      seq: found.seq,
      model: m.model,
      calls: m.llm_calls,
      inputTokens: m.prompt_tokens,
      outputTokens: m.completion_tokens,
      microUsd: Math.round(m.accumulated_cost * 1_000_000),
      day: at.slice(0, 10),
      at,
    };
  }

  /** Writes a report into the ledger; a failure is logged, never fails the batch (the next report is cumulative). */
  private async recordAgentReport(report: AgentReport): Promise<void> {
    await this.agentUsage
      ?.recordAgentReport(report)
      .catch((err: unknown) =>
        logger.warn('usage.agent-report-failed', { conversationId: report.conversationId, error: err as Error }),
      );
  }

  /**
   * A conversation at one of its plan's event caps stops: the agent is told to pause, the status says
   * error, and one event at the number after `at` (the cap, or the committed end) says why (at the
   * cap: written once, a retry of it is a no-op).
   */
  private async stopAtCap(
    conversation: ConversationRecord,
    lastSeq: number,
    at: number,
    why: { code: string; detail: string },
  ): Promise<void> {
    if (lastSeq < at) return; // the end has not reached the cap yet (a batch beyond a gap)
    const ref = { userId: conversation.userId, conversationId: conversation.id };
    const event = {
      kind: 'ConversationErrorEvent',
      id: `cap-${conversation.id}`,
      timestamp: new Date(this.now()).toISOString(),
      source: 'environment',
      ...why,
    } as unknown as AgentEventEnvelope;
    const { lastSeq: end } = await this.events.append(ref, at + 1, [event]);
    await this.feed.committed(ref, end).catch(() => {});
    if (conversation.execution_status !== 'error')
      await this.versioned.update(conversation.userId, conversation.id, () => ({ execution_status: 'error' }));
    if (conversation.sandbox_id)
      await this.sandboxes
        .enqueueCommand(
          conversation.userId,
          conversation.sandbox_id,
          queued({ type: 'pause_conversation', conversation_id: conversation.id }),
        )
        .catch((err: unknown) =>
          logger.warn('conversation.cap-pause-failed', { conversationId: conversation.id, error: err as Error }),
        );
  }
}
