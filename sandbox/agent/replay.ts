/**
 * Reading a recorded trajectory (`replay_json`) into the steps to re-execute. Two shapes are read:
 * - OpenHands V0 trajectories: a list (or `{"trajectory": [...]}`) of events with an `action` name
 *   (`run`, `write`, `edit`, `read`, `think`, `call_tool_mcp`, `message`, ...) and `args`;
 * - V1 events as this agent emits them: `ActionEvent` (`tool_name`, `action`) and `MessageEvent`.
 * Observations are skipped (they are produced again), and so are `finish` actions and agent
 * bookkeeping (`system`, `recall`, `change_agent_state`), which change no workspace.
 */

export type ReplayStep =
  | { type: 'message'; role: 'user' | 'assistant'; text: string; imageUrls: string[] }
  | { type: 'action'; toolName: string; args: Record<string, unknown> };

/** A trajectory that cannot be read; the message says why. */
export class TrajectoryError extends Error {}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

function fromV0(e: Obj): ReplayStep | null {
  const args = isObj(e.args) ? e.args : {};
  switch (e.action) {
    case 'run':
      return { type: 'action', toolName: 'execute_bash', args: { command: str(args.command) } };
    case 'write':
      return {
        type: 'action',
        toolName: 'str_replace_editor',
        args: { command: 'create', path: str(args.path), file_text: str(args.content) },
      };
    case 'read':
      return { type: 'action', toolName: 'str_replace_editor', args: { command: 'view', path: str(args.path) } };
    case 'edit': {
      const command = str(args.command) || (args.old_str !== undefined ? 'str_replace' : 'create');
      const picked: Obj = { command, path: str(args.path) };
      for (const k of ['file_text', 'old_str', 'new_str', 'insert_line', 'view_range']) {
        if (args[k] !== undefined && args[k] !== null) picked[k] = args[k];
      }
      return { type: 'action', toolName: 'str_replace_editor', args: picked };
    }
    case 'think':
      return { type: 'action', toolName: 'think', args: { thought: str(args.thought) } };
    case 'call_tool_mcp':
      return { type: 'action', toolName: str(args.name), args: isObj(args.arguments) ? args.arguments : {} };
    case 'message': {
      const imageUrls = Array.isArray(args.image_urls)
        ? args.image_urls.filter((u): u is string => typeof u === 'string')
        : [];
      return { type: 'message', role: e.source === 'user' ? 'user' : 'assistant', text: str(args.content), imageUrls };
    }
    default:
      return null;
  }
}

function fromV1(e: Obj): ReplayStep | null {
  if (e.kind === 'ActionEvent' && isObj(e.action) && typeof e.tool_name === 'string') {
    const { kind, ...rest } = e.action;
    if (kind === 'FinishAction') return null;
    // Actions carry every argument, unset ones as null (OpenHands' shape); the tools want them absent.
    const all = kind === 'MCPToolAction' && isObj(rest.data) ? rest.data : rest;
    const args = Object.fromEntries(Object.entries(all).filter(([, v]) => v !== null));
    return { type: 'action', toolName: e.tool_name, args };
  }
  if (e.kind === 'MessageEvent' && isObj(e.llm_message)) {
    const m = e.llm_message;
    const parts = Array.isArray(m.content) ? m.content.filter(isObj) : [];
    const text = parts
      .filter((p) => p.type === 'text')
      .map((p) => str(p.text))
      .join('\n');
    const imageUrls = parts.flatMap((p) =>
      p.type === 'image' && Array.isArray(p.image_urls)
        ? p.image_urls.filter((u): u is string => typeof u === 'string')
        : [],
    );
    return { type: 'message', role: m.role === 'user' ? 'user' : 'assistant', text, imageUrls };
  }
  return null;
}

/** The steps of a trajectory given as JSON text or already parsed. */
export function parseTrajectory(input: unknown): ReplayStep[] {
  let data = input;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch (err) {
      throw new TrajectoryError(`replay_json is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (isObj(data) && Array.isArray(data.trajectory)) data = data.trajectory;
  if (!Array.isArray(data))
    throw new TrajectoryError('replay_json must be a list of events (or an object with a "trajectory" list).');
  const steps: ReplayStep[] = [];
  for (const e of data) {
    if (!isObj(e)) continue;
    const step = typeof e.action === 'string' ? fromV0(e) : fromV1(e);
    if (step?.type === 'action' && !step.toolName) continue;
    if (step) steps.push(step);
  }
  if (!steps.some((s) => s.type === 'action'))
    throw new TrajectoryError('replay_json holds no action this agent can replay.');
  return steps;
}
