import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ModelMessage } from 'ai';
import type { EventOf, ExecutionStatus, Metrics } from '#sandbox/agent/events.ts';

/** What a session needs to carry on in a new process (see `stateFile` in session.ts). */
export interface SavedState {
  version: 1;
  status: ExecutionStatus;
  history: ModelMessage[];
  inbox: ModelMessage[];
  pending: { event: EventOf<'ActionEvent'>; args: Record<string, unknown> }[];
  invalidResults: Extract<ModelMessage, { role: 'tool' }>['content'];
  iterations: number;
  recent: string[];
  metrics: Metrics;
}

export function readState(file: string): SavedState | null {
  if (!existsSync(file)) return null;
  const state = JSON.parse(readFileSync(file, 'utf8')) as SavedState;
  if (state.version !== 1) throw new Error(`${file}: unknown state version ${String(state.version)}`);
  return state;
}

/** JSON turned the URLs of image parts into strings; the SDK reads a string as base64 data. */
export function reviveImages(m: ModelMessage): ModelMessage {
  if (m.role !== 'user' || typeof m.content === 'string') return m;
  return { ...m, content: m.content.map((p) => (p.type === 'image' && typeof p.image === 'string' && URL.canParse(p.image) ? { ...p, image: new URL(p.image) } : p)) };
}

/** Writes atomically (temporary file, then rename): a reader never sees half a state. */
export function writeState(file: string, state: SavedState): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(state));
  renameSync(`${file}.tmp`, file);
}
