import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpConfig } from '#shared/settings/model.ts';

/** One tool of one MCP server, under the name the model sees. */
export interface McpTool {
  /** Unique among all the agent's tools; the server's own name unless that clashes. */
  name: string;
  /** The name the server knows it by. */
  remoteName: string;
  server: string;
  description: string;
  inputSchema: Record<string, unknown>;
  call(args: Record<string, unknown>, timeoutMs: number): Promise<{ text: string; isError: boolean }>;
}

export interface McpConnectOptions {
  /** Working directory of stdio servers (the workspace). */
  cwd: string;
  /** Names already taken (the built-in tools). */
  reservedNames: Iterable<string>;
  connectTimeoutMs: number;
  /** A server that cannot be reached or listed: reported here, then left out. */
  onServerError(server: string, message: string): void;
}

const toolNameOf = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'tool';

/** Text of a tools/call result; non-text parts are named, since the model gets text. */
function resultText(content: unknown): string {
  if (!Array.isArray(content)) return JSON.stringify(content ?? null);
  return content
    .map((part: { type?: string; text?: string; resource?: { uri?: string; text?: string } }) => {
      if (part.type === 'text') return part.text ?? '';
      if (part.type === 'resource') return part.resource?.text ?? `[resource ${part.resource?.uri ?? ''}]`;
      return `[${part.type ?? 'unknown'} content]`;
    })
    .join('\n');
}

/**
 * The clients of every MCP server of a conversation: stdio servers are spawned here (inside the
 * sandbox, in the workspace), SSE and streamable-HTTP servers are reached at their URL with the
 * configured key as a bearer token. A server that fails never fails the others.
 */
export class McpHub {
  readonly tools: McpTool[] = [];
  readonly #clients: Client[] = [];

  static async connect(config: McpConfig, options: McpConnectOptions): Promise<McpHub> {
    const hub = new McpHub();
    const taken = new Set(options.reservedNames);
    const targets: { server: string; transport: () => Transport; stderr?: () => string }[] = [];
    for (const s of config.stdio_servers) {
      let stderr = '';
      targets.push({
        server: s.name,
        transport: () => {
          const env: Record<string, string> = { ...getDefaultEnvironment() };
          for (const [k, v] of Object.entries(s.env)) if (v !== null) env[k] = v;
          const t = new StdioClientTransport({
            command: s.command,
            args: s.args,
            env,
            cwd: options.cwd,
            stderr: 'pipe',
          });
          t.stderr?.on('data', (c: Buffer) => {
            stderr = (stderr + c.toString('utf8')).slice(-4000);
          });
          return t;
        },
        // The last lines a failing server wrote say why it failed.
        stderr: () => stderr.trim().split('\n').slice(-5).join('\n'),
      });
    }
    const remote = (kind: 'sse' | 'shttp') => (s: McpConfig['sse_servers'][number]) => {
      const url = new URL(s.url);
      const requestInit: RequestInit = s.api_key ? { headers: { Authorization: `Bearer ${s.api_key}` } } : {};
      targets.push({
        server: `${url.host}${url.pathname}`,
        transport: () =>
          kind === 'sse'
            ? new SSEClientTransport(url, { requestInit })
            : new StreamableHTTPClientTransport(url, { requestInit }),
      });
    };
    config.sse_servers.forEach(remote('sse'));
    config.shttp_servers.forEach(remote('shttp'));

    // Connect in parallel: a slow server delays start by its own time-out, not the sum.
    const connected = await Promise.all(
      targets.map(async (t) => {
        const client = new Client({ name: 'agent-conversation-service', version: '1.0.0' });
        try {
          await client.connect(t.transport(), { timeout: options.connectTimeoutMs });
          const { tools } = await client.listTools(undefined, { timeout: options.connectTimeoutMs });
          return { ...t, client, tools };
        } catch (err) {
          await client.close().catch(() => undefined);
          const why = t.stderr?.();
          options.onServerError(t.server, `${(err as Error).message}${why ? `\n${why}` : ''}`);
          return null;
        }
      }),
    );
    for (const c of connected) {
      if (!c) continue;
      hub.#clients.push(c.client);
      for (const tool of c.tools) {
        let name = toolNameOf(tool.name);
        if (taken.has(name)) name = toolNameOf(`${c.server}_${tool.name}`);
        for (let i = 2; taken.has(name); i++) name = toolNameOf(`${c.server}_${tool.name}_${i}`);
        taken.add(name);
        const client = c.client;
        hub.tools.push({
          name,
          remoteName: tool.name,
          server: c.server,
          description: tool.description ?? `${tool.name} (MCP server ${c.server})`,
          inputSchema: tool.inputSchema as Record<string, unknown>,
          call: async (args, timeoutMs) => {
            const result = await client.callTool({ name: tool.name, arguments: args }, undefined, {
              timeout: timeoutMs,
            });
            return { text: resultText(result.content ?? result.toolResult), isError: result.isError === true };
          },
        });
      }
    }
    return hub;
  }

  async close(): Promise<void> {
    await Promise.all(this.#clients.map((c) => c.close().catch(() => undefined)));
    this.#clients.length = 0;
  }
}
