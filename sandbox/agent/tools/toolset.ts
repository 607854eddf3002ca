import { z } from 'zod';
import type { TextContent } from '#sandbox/agent/events.ts';
import type { McpTool } from '#sandbox/agent/mcp.ts';
import type { ShellRunner } from '#sandbox/agent/tools/bash.ts';
import { EditorError, editorArgsSchema, type FileEditor } from '#sandbox/agent/tools/editor.ts';

/** What running one action produced: the observation event's payload and the text the model reads. */
export interface ToolOutcome {
  observation: { kind: string } & Record<string, unknown>;
  /** The tool result given back to the model. */
  text: string;
  isError: boolean;
  /** The agent said it is done. */
  finish?: boolean;
}

/** One tool as the agent offers and runs it. */
export interface AgentTool {
  name: string;
  description: string;
  /** zod schema for the built-in tools, JSON Schema for MCP tools (the server validates those). */
  input: z.ZodType<Record<string, unknown>> | { jsonSchema: Record<string, unknown> };
  /** The `action` of the ActionEvent for these arguments. */
  action(args: Record<string, unknown>): { kind: string } & Record<string, unknown>;
  /** Runs the action. Throws only for arguments that do not fit the schema. */
  run(args: Record<string, unknown>): Promise<ToolOutcome>;
}

export interface BuiltinToolOptions {
  workspaceDir: string;
  shell: ShellRunner;
  editor: FileEditor;
  /** Environment of every command (secrets and git identity included). */
  commandEnv: () => Record<string, string>;
  commandTimeoutMs: number;
  maxCommandTimeoutMs: number;
  maxOutputChars: number;
}

const text = (t: string): TextContent[] => [{ type: 'text', text: t }];

const bashArgs = z.object({
  command: z.string().min(1).describe('The shell command to run'),
  timeout: z.number().positive().optional().describe('Seconds before the command is stopped (optional)'),
});
const thinkArgs = z.object({ thought: z.string().describe('Your reasoning') });
const finishArgs = z.object({ message: z.string().describe('A short summary of what was done, for the user') });

export function builtinTools(o: BuiltinToolOptions): AgentTool[] {
  const maxSeconds = o.maxCommandTimeoutMs / 1000;
  return [
    {
      name: 'execute_bash',
      description:
        `Run a shell command with bash in the workspace (${o.workspaceDir}). Each call starts a fresh shell in the ` +
        `workspace directory: chain steps with && in one command. Stdout and stderr are returned together, cut in ` +
        `the middle when long. A command is stopped after ${o.commandTimeoutMs / 1000} s unless you give a timeout ` +
        `(at most ${maxSeconds} s). Start servers in the background with their output redirected to a file. ` +
        `There is no terminal: do not run interactive programs.`,
      input: bashArgs,
      action: (args) => ({ kind: 'ExecuteBashAction', ...args }),
      run: async (raw) => {
        const args = bashArgs.parse(raw);
        const timeoutMs = Math.min(args.timeout ? args.timeout * 1000 : o.commandTimeoutMs, o.maxCommandTimeoutMs);
        const r = await o.shell.run(args.command, { cwd: o.workspaceDir, env: o.commandEnv(), timeoutMs, maxOutputChars: o.maxOutputChars });
        const status = r.timedOut ? '[Command timed out]' : `[Command finished with exit code ${r.exitCode}]`;
        return {
          observation: {
            kind: 'ExecuteBashObservation',
            command: args.command,
            content: text(r.output),
            exit_code: r.exitCode,
            timeout: r.timedOut,
            truncated: r.truncated,
            is_error: r.timedOut || r.exitCode !== 0,
          },
          text: `${r.output}\n${status}`,
          isError: r.timedOut || r.exitCode !== 0,
        };
      },
    },
    {
      name: 'str_replace_editor',
      description:
        'View, create and edit text files in the workspace. `view` shows a file with line numbers (or a directory ' +
        'two levels deep); `create` writes a new file (it never overwrites); `str_replace` replaces old_str, which ' +
        'must occur exactly once, with new_str; `insert` adds new_str after line insert_line; `undo_edit` reverts ' +
        'the last edit of the file. Paths must be inside the workspace.',
      input: editorArgsSchema,
      action: (args) => ({ kind: 'StrReplaceEditorAction', ...args }),
      run: async (raw) => {
        const args = editorArgsSchema.parse(raw);
        try {
          const r = await o.editor.run(args);
          return {
            observation: { kind: 'StrReplaceEditorObservation', command: args.command, path: r.path, content: text(r.output), is_error: false },
            text: r.output,
            isError: false,
          };
        } catch (err) {
          if (!(err instanceof EditorError)) throw err;
          return {
            observation: { kind: 'StrReplaceEditorObservation', command: args.command, path: args.path, content: text(err.message), is_error: true },
            text: `ERROR: ${err.message}`,
            isError: true,
          };
        }
      },
    },
    {
      name: 'think',
      description: 'Think through a problem or plan the next steps. Changes nothing; use it when reasoning helps.',
      input: thinkArgs,
      action: (args) => ({ kind: 'ThinkAction', ...args }),
      run: async (raw) => {
        thinkArgs.parse(raw);
        const t = 'Your thought has been logged.';
        return { observation: { kind: 'ThinkObservation', content: text(t), is_error: false }, text: t, isError: false };
      },
    },
    {
      name: 'finish',
      description: 'Call this when the task is complete (or cannot be completed), with a summary for the user.',
      input: finishArgs,
      action: (args) => ({ kind: 'FinishAction', ...args }),
      run: async (raw) => {
        const args = finishArgs.parse(raw);
        return { observation: { kind: 'FinishObservation', message: args.message, content: text(args.message), is_error: false }, text: args.message, isError: false, finish: true };
      },
    },
  ];
}

export function mcpAgentTool(t: McpTool, callTimeoutMs: number): AgentTool {
  return {
    name: t.name,
    description: t.description,
    input: { jsonSchema: t.inputSchema },
    action: (args) => ({ kind: 'MCPToolAction', data: args }),
    run: async (args) => {
      try {
        const r = await t.call(args, callTimeoutMs);
        return { observation: { kind: 'MCPToolObservation', tool_name: t.remoteName, content: text(r.text), is_error: r.isError }, text: r.text, isError: r.isError };
      } catch (err) {
        const msg = `MCP tool ${t.remoteName} (server ${t.server}) failed: ${(err as Error).message}`;
        return { observation: { kind: 'MCPToolObservation', tool_name: t.remoteName, content: text(msg), is_error: true }, text: `ERROR: ${msg}`, isError: true };
      }
    },
  };
}
