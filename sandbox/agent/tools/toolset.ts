import { z } from 'zod';
import type { TextContent } from '#sandbox/agent/events.ts';
import type { McpTool } from '#sandbox/agent/mcp.ts';
import { EditorError, editorArgsSchema, type EditorArgs, type FileEditor } from '#sandbox/agent/tools/editor.ts';
import type { Terminal } from '#sandbox/agent/tools/terminal.ts';

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
  /** The persistent shell; none for an agent that may not run commands (the planning agent). */
  terminal: Terminal | null;
  editor: FileEditor;
  /** Only this file (relative to the workspace) may be changed; every other path is read-only. */
  writableFile?: string;
  hardTimeoutMs: number;
  maxCommandTimeoutMs: number;
  noChangeTimeoutMs: number;
}

const text = (t: string): TextContent[] => [{ type: 'text', text: t }];

const bashArgs = z.object({
  command: z
    .string()
    .describe(
      'The command to run. Empty with a command still running: wait for more of its output. "C-c", "C-d" or "C-z": send that key.',
    ),
  is_input: z
    .boolean()
    .optional()
    .describe(
      'true: type `command` into the running process (e.g. an answer to a prompt) instead of starting a command',
    ),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe('Seconds to wait before returning; the command keeps running (optional)'),
  reset: z
    .boolean()
    .optional()
    .describe('true: kill the shell and start a new one (working directory and variables are lost)'),
});
const thinkArgs = z.object({ thought: z.string().describe('Your reasoning') });
const finishArgs = z.object({ message: z.string().describe('A short summary of what was done, for the user') });

/** The shell tool: one persistent bash per conversation. */
function terminalTool(o: BuiltinToolOptions, terminal: Terminal): AgentTool {
  return {
    name: 'execute_bash',
    description:
      `Run a command in a persistent bash shell (it starts in ${o.workspaceDir}). The shell lives for the whole ` +
      'conversation: the working directory, exported variables, an activated virtualenv and background jobs carry ' +
      `over between calls. A command that prints nothing new for ${o.noChangeTimeoutMs / 1000} s returns what it printed so ` +
      "far with exit code -1 and keeps running: send an empty command '' to wait for more, send input to it with " +
      'is_input: true, or interrupt it with "C-c". While a command runs, new commands are refused. Give `timeout` ' +
      `(seconds, at most ${o.maxCommandTimeoutMs / 1000}) for commands that work silently for long. Run servers in the ` +
      'background with their output redirected to a file. Output is cut in the middle when long.',
    input: bashArgs,
    action: (args) => ({
      kind: 'ExecuteBashAction',
      command: '',
      is_input: false,
      timeout: null,
      reset: false,
      ...args,
    }),
    run: async (raw) => {
      const args = bashArgs.parse(raw);
      if (args.reset) await terminal.reset();
      const r = await terminal.run({ command: args.command, isInput: args.is_input, timeoutSeconds: args.timeout });
      const isError = r.refused || (!r.timedOut && r.exitCode !== 0);
      return {
        observation: {
          kind: 'ExecuteBashObservation',
          command: args.command,
          output: r.output,
          exit_code: r.exitCode,
          error: r.refused,
          timeout: r.timedOut,
          metadata: r.metadata,
          truncated: r.truncated,
          content: text(r.text),
          is_error: isError,
        },
        text: r.text,
        isError,
      };
    },
  };
}

function editorTool(o: BuiltinToolOptions): AgentTool {
  const only = o.writableFile;
  const description = only
    ? `View files and directories of the workspace (\`view\`), and write the plan in ${only}: \`create\` it, then \`str_replace\`/\`insert\`/\`undo_edit\` in it. No other file can be changed.`
    : 'View, create and edit text files in the workspace. `view` shows a file with line numbers (or a directory ' +
      'two levels deep); `create` writes a new file (it never overwrites); `str_replace` replaces old_str, which ' +
      'must occur exactly once, with new_str; `insert` adds new_str after line insert_line; `undo_edit` reverts ' +
      'the last edit of the file. Paths must be inside the workspace.';
  const failed = (args: EditorArgs, message: string): ToolOutcome => ({
    observation: {
      kind: 'StrReplaceEditorObservation',
      command: args.command,
      path: args.path,
      output: message,
      error: message,
      prev_exist: null,
      old_content: null,
      new_content: null,
      content: text(message),
      is_error: true,
    },
    text: `ERROR: ${message}`,
    isError: true,
  });
  return {
    name: 'str_replace_editor',
    description,
    input: editorArgsSchema,
    action: (args) => ({
      kind: 'StrReplaceEditorAction',
      path: '',
      file_text: null,
      old_str: null,
      new_str: null,
      insert_line: null,
      view_range: null,
      ...args,
    }),
    run: async (raw) => {
      const args = editorArgsSchema.parse(raw);
      try {
        if (only && args.command !== 'view' && o.editor.resolve(args.path) !== o.editor.resolve(only)) {
          return failed(
            args,
            `Only ${only} can be changed here (you are planning, not implementing): ${args.path} was left as it is.`,
          );
        }
        const r = await o.editor.run(args);
        return {
          observation: {
            kind: 'StrReplaceEditorObservation',
            command: args.command,
            path: r.path,
            output: r.output,
            error: null,
            prev_exist: r.prevExist,
            old_content: r.oldContent,
            new_content: r.newContent,
            content: text(r.output),
            is_error: false,
          },
          text: r.output,
          isError: false,
        };
      } catch (err) {
        if (!(err instanceof EditorError)) throw err;
        return failed(args, err.message);
      }
    },
  };
}

const thinkTool: AgentTool = {
  name: 'think',
  description: 'Think through a problem or plan the next steps. Changes nothing; use it when reasoning helps.',
  input: thinkArgs,
  action: (args) => ({ kind: 'ThinkAction', ...args }),
  run: async (raw) => {
    thinkArgs.parse(raw);
    const t = 'Your thought has been logged.';
    return {
      observation: { kind: 'ThinkObservation', content: text(t), output: t, is_error: false },
      text: t,
      isError: false,
    };
  },
};

const finishTool: AgentTool = {
  name: 'finish',
  description: 'Call this when the task is complete (or cannot be completed), with a summary for the user.',
  input: finishArgs,
  action: (args) => ({ kind: 'FinishAction', ...args }),
  run: async (raw) => {
    const args = finishArgs.parse(raw);
    return {
      observation: {
        kind: 'FinishObservation',
        message: args.message,
        output: args.message,
        content: text(args.message),
        is_error: false,
      },
      text: args.message,
      isError: false,
      finish: true,
    };
  },
};

/** The built-in tools: the shell (when given), the editor, think and finish. */
export function builtinTools(o: BuiltinToolOptions): AgentTool[] {
  return [...(o.terminal ? [terminalTool(o, o.terminal)] : []), editorTool(o), thinkTool, finishTool];
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
        return {
          observation: {
            kind: 'MCPToolObservation',
            tool_name: t.remoteName,
            content: text(r.text),
            output: r.text,
            is_error: r.isError,
          },
          text: r.text,
          isError: r.isError,
        };
      } catch (err) {
        const msg = `MCP tool ${t.remoteName} (server ${t.server}) failed: ${(err as Error).message}`;
        return {
          observation: {
            kind: 'MCPToolObservation',
            tool_name: t.remoteName,
            content: text(msg),
            output: msg,
            is_error: true,
          },
          text: `ERROR: ${msg}`,
          isError: true,
        };
      }
    },
  };
}
