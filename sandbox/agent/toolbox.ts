import { jsonSchema, tool, type ToolSet } from 'ai';
import { z } from 'zod';
import type { AgentChoice } from '#shared/settings/model.ts';
import { securityRiskSchema, type EventOf, type SecurityRisk } from '#sandbox/agent/events.ts';
import type { McpHub } from '#sandbox/agent/mcp.ts';
import type { FileEditor } from '#sandbox/agent/tools/editor.ts';
import type { Terminal } from '#sandbox/agent/tools/terminal.ts';
import { builtinTools, mcpAgentTool, type AgentTool } from '#sandbox/agent/tools/toolset.ts';
import { webTools, type WebToolOptions } from '#sandbox/agent/tools/web.ts';

/** The agents a conversation can run (`agent` of the settings; `agent_type: "plan"` picks the planner). */
export type AgentKind = AgentChoice;

/** The planning agent's one writable file, in the workspace. */
export const PLAN_FILE = 'PLAN.md';

export interface ToolboxOptions {
  agent: AgentKind;
  workspaceDir: string;
  terminal: Terminal;
  editor: FileEditor;
  /** The model rates each action's risk: every tool but think/finish gets a `security_risk` argument. */
  securityAnalyzer: boolean;
  /** Web search and fetch, with a search API key. */
  web: WebToolOptions | null;
  mcp: McpHub | null;
  mcpCallTimeoutMs: number;
  hardTimeoutMs: number;
  maxCommandTimeoutMs: number;
  noChangeTimeoutMs: number;
}

export interface Toolbox {
  tools: Map<string, AgentTool>;
  /** What the model is offered. */
  toolSet: ToolSet;
  /** The tools as the SystemPromptEvent lists them. */
  specs: EventOf<'SystemPromptEvent'>['tools'];
}

/** Tools that change nothing, so they never need a risk rating nor a confirmation. */
export const harmlessTools = new Set(['think', 'finish']);

const riskArgument = z
  .enum(['LOW', 'MEDIUM', 'HIGH'])
  .optional()
  .describe('Your estimate of the risk of this action: LOW, MEDIUM or HIGH (always set it).');

/**
 * The tools of an agent: the default agent gets the shell, the editor, think, finish, web search and
 * fetch (with a search key) and the MCP servers' tools; the planning agent only reads files, thinks,
 * writes PLAN.md and finishes.
 */
export function assembleTools(o: ToolboxOptions): Toolbox {
  const planning = o.agent === 'PlanningAgent';
  const builtin = builtinTools({
    workspaceDir: o.workspaceDir,
    terminal: planning ? null : o.terminal,
    editor: o.editor,
    writableFile: planning ? PLAN_FILE : undefined,
    hardTimeoutMs: o.hardTimeoutMs,
    maxCommandTimeoutMs: o.maxCommandTimeoutMs,
    noChangeTimeoutMs: o.noChangeTimeoutMs,
  });
  const all = planning
    ? builtin
    : [
        ...builtin,
        ...(o.web ? webTools(o.web) : []),
        ...(o.mcp?.tools.map((t) => mcpAgentTool(t, o.mcpCallTimeoutMs)) ?? []),
      ];
  const rated = (t: AgentTool) => o.securityAnalyzer && !harmlessTools.has(t.name);
  const parameters = (t: AgentTool): Record<string, unknown> => {
    const base =
      'jsonSchema' in t.input
        ? t.input.jsonSchema
        : (z.toJSONSchema(t.input, { io: 'input' }) as Record<string, unknown>);
    if (!rated(t)) return base;
    const properties = {
      ...((base.properties as Record<string, unknown>) ?? {}),
      security_risk: z.toJSONSchema(riskArgument, { io: 'input' }),
    };
    return {
      ...base,
      type: 'object',
      properties,
      required: [...new Set([...((base.required as string[]) ?? []), 'security_risk'])],
    };
  };
  const toolSet: ToolSet = Object.fromEntries(
    all.map((t) => {
      // Unrated built-in tools keep their zod schema, so the SDK reports bad arguments as invalid calls. A rated
      // tool's schema asks for security_risk, but a call without it still runs (as UNKNOWN risk, which waits).
      const input = 'jsonSchema' in t.input || rated(t) ? jsonSchema(parameters(t)) : t.input;
      return [t.name, tool({ description: t.description, inputSchema: input as never })];
    }),
  );
  const specs = all.map((t) => ({
    name: t.name,
    description: t.description,
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: parameters(t) },
  }));
  return { tools: new Map(all.map((t) => [t.name, t])), toolSet, specs };
}

/** The risk the model gave in a call's arguments (UNKNOWN when it gave none), and the arguments without it. */
export function splitRisk(input: unknown): { risk: SecurityRisk; args: Record<string, unknown> } {
  const { security_risk, ...args } = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  const parsed = securityRiskSchema.safeParse(
    typeof security_risk === 'string' ? security_risk.toUpperCase() : security_risk,
  );
  return { risk: parsed.success ? parsed.data : 'UNKNOWN', args };
}

/**
 * Whether actions wait for the user in confirmation mode: without an analyzer every action does
 * (think and finish excepted); with one, only HIGH and UNKNOWN ones (OpenHands' ConfirmRisky defaults).
 */
export function needsConfirmation(
  actions: { toolName: string; risk: SecurityRisk; known: boolean }[],
  securityAnalyzer: boolean,
): boolean {
  return actions.some(
    (a) =>
      a.known && !harmlessTools.has(a.toolName) && (!securityAnalyzer || a.risk === 'HIGH' || a.risk === 'UNKNOWN'),
  );
}

// Variables of the sandbox program's own environment that commands may see; nothing else leaks
// (the program's environment holds its key for the control plane).
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TERM',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'TZ',
];

/** The whole environment of the agent's shell: a few of the program's variables, the image's additions, the git identity and the custom secrets. */
export function commandEnvironment(o: {
  commandEnv?: Record<string, string>;
  gitIdentity?: { name: string; email: string } | null;
  secrets?: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  Object.assign(env, { PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0' }, o.commandEnv);
  const git = o.gitIdentity;
  if (git?.name) Object.assign(env, { GIT_AUTHOR_NAME: git.name, GIT_COMMITTER_NAME: git.name });
  if (git?.email) Object.assign(env, { GIT_AUTHOR_EMAIL: git.email, GIT_COMMITTER_EMAIL: git.email });
  Object.assign(env, o.secrets);
  return env;
}
