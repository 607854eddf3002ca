import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ModelMessage } from 'ai';
import type { EventOf } from '#sandbox/agent/events.ts';
import type { AgentMetrics, ExecutionStatus } from '#shared/protocol.ts';
import { reviveImages, type HistoryEntry, type ToolResultPart } from '#sandbox/agent/history.ts';

/** The loop's state that survives a process: what `stateFile` (session.ts) holds. */
export interface LoopState {
  status: ExecutionStatus;
  /** What the model sees, each message with the ids of the events it stands for. */
  history: HistoryEntry[];
  /** User messages that arrived while a step was under way; they join the history between steps. */
  inbox: HistoryEntry[];
  /** Actions waiting for confirmation. */
  pending: { event: EventOf<'ActionEvent'>; args: Record<string, unknown> }[];
  /** Results for invalid calls of the step whose actions are pending: they join those actions' results. */
  invalidResults: ToolResultPart[];
  /** Model calls since the last user message. */
  iterations: number;
  /** The last actions and results, to notice an agent stuck in a loop. */
  recent: string[];
  metrics: AgentMetrics;
}

interface SavedV1 extends Omit<LoopState, 'history' | 'inbox'> {
  version: 1;
  history: ModelMessage[];
  inbox: ModelMessage[];
}
interface SavedV2 extends LoopState {
  version: 2;
}

const revive = (e: HistoryEntry): HistoryEntry => ({ ...e, message: reviveImages(e.message) });

/** The saved state, or null when there is none; throws for a file it cannot read. */
export function readState(file: string): LoopState | null {
  if (!existsSync(file)) return null;
  const saved = JSON.parse(readFileSync(file, 'utf8')) as SavedV1 | SavedV2;
  if (saved.version === 1) {
    // Before condensation existed, messages had no event ids.
    const { version: _, ...rest } = saved;
    return {
      ...rest,
      history: saved.history.map((m) => revive({ message: m, eventIds: [] })),
      inbox: saved.inbox.map((m) => revive({ message: m, eventIds: [] })),
    };
  }
  if (saved.version !== 2)
    throw new Error(`${file}: unknown state version ${String((saved as { version: unknown }).version)}`);
  const { version: _, ...state } = saved;
  return { ...state, history: state.history.map(revive), inbox: state.inbox.map(revive) };
}

/** Writes atomically (temporary file, then rename): a reader never sees half a state. */
export function writeState(file: string, state: LoopState): void {
  mkdirSync(dirname(file), { recursive: true });
  const saved: SavedV2 = { version: 2, ...state };
  writeFileSync(`${file}.tmp`, JSON.stringify(saved));
  renameSync(`${file}.tmp`, file);
}
