/**
 * `npm run demo`: the whole local stack plus a scripted LLM (no key, no network), one conversation,
 * and its events live in the terminal, one line per step. Ends with where the workspace is.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalStack } from '#infra/local/stack.ts';
import { reply, startScriptedLlm } from '#test/helpers/scripted-llm.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-demo-'));
const llm = await startScriptedLlm([
  reply.tool('think', { thought: 'I will look around, write a small program, run it, and finish.' }),
  reply.bash('ls -la'),
  reply.tool('str_replace_editor', {
    command: 'create',
    path: 'hello.py',
    file_text: 'print("Hello from the agent\'s sandbox")\n',
  }),
  reply.bash("python3 hello.py || node -e \"console.log('Hello from the agent\\'s sandbox')\""),
  reply.finish('I wrote hello.py and ran it.'),
]);
const stack = await startLocalStack({ port: 0, host: '127.0.0.1', dataDir, memory: true });
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers: { 'x-session-api-key': stack.devKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return (await res.json()) as any;
};

const print = (line: string) => process.stdout.write(`${line}\n`);
const clip = (s: unknown, n = 100) =>
  String(s ?? '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, n);
const textOf = (content: unknown) =>
  Array.isArray(content)
    ? content.map((c: any) => c.text ?? (c.image_urls ? `[${c.image_urls.length} image(s)]` : '')).join(' ')
    : String(content ?? '');

function describe(e: any): string | null {
  switch (e.kind) {
    case 'MessageEvent':
      return `${e.source === 'user' ? 'user ' : 'agent'} 💬 ${clip(textOf(e.llm_message?.content), 120)}`;
    case 'ActionEvent': {
      const a = e.action ?? {};
      const what =
        e.tool_name === 'str_replace_editor'
          ? `${a.command} ${a.path}`
          : (a.command ?? a.thought ?? a.message ?? JSON.stringify(a));
      return `agent ▶ ${e.tool_name}: ${clip(typeof what === 'string' ? what : JSON.stringify(what))}`;
    }
    case 'ObservationEvent': {
      const o = e.observation ?? {};
      const text = textOf(o.content ?? o.output ?? o.text ?? JSON.stringify(o));
      return `  env ◀ ${clip(text)}`;
    }
    case 'AgentErrorEvent':
      return `error ✖ ${clip(e.error, 160)}`;
    case 'ConversationStateUpdateEvent':
      return e.key === 'execution_status' ? `state ● ${e.value}` : null;
    case 'SystemPromptEvent':
      return `agent ⚙ system prompt, ${e.tools?.length ?? 0} tools`;
    default:
      return `${e.source} · ${e.kind}`;
  }
}

try {
  print(`Local stack on ${stack.url} (data in ${dataDir}); scripted LLM on ${llm.baseUrl}`);
  await call('POST', '/api/settings', {
    llm_model: 'scripted-demo-model',
    llm_api_key: 'sk-demo',
    llm_base_url: llm.baseUrl,
    git_user_name: 'Demo User',
    git_user_email: 'demo@example.test',
  });
  const task = await call('POST', '/api/v1/app-conversations', {
    title: 'Demo: hello world',
    initial_message: { content: [{ type: 'text', text: 'Write a hello-world program in this workspace and run it.' }] },
  });
  print(`Start task ${task.id}: ${task.status}`);
  let status = task.status;
  const conversationId: string | null = task.app_conversation_id;
  let sandboxId: string | null = null;
  let cursor: string | null = null;
  let execution: string | null = null;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const [t] = await call('GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`);
    if (t.status !== status) {
      status = t.status;
      print(`Start task: ${status}${t.detail ? ` (${t.detail})` : ''}`);
    }
    sandboxId = t.sandbox_id;
    if (t.status === 'ERROR') break;
    if (conversationId) {
      const page = await call(
        'GET',
        `/api/v1/events/search?conversation_id__eq=${conversationId}&limit=100${cursor ? `&page_id=${encodeURIComponent(cursor)}` : ''}`,
      );
      for (const e of page.items ?? []) {
        const line = describe(e);
        if (line) print(line);
      }
      cursor = page.next_page_id ?? page.follow_page_id ?? cursor;
      const [c] = await call('GET', `/api/v1/app-conversations?ids=${conversationId}`);
      execution = c?.execution_status ?? null;
      if (['finished', 'error', 'stuck'].includes(execution ?? '') && !page.next_page_id && !(page.items ?? []).length)
        break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  print(`\nConversation ${conversationId}: ${execution ?? status}`);
  if (sandboxId) print(`Workspace: ${join(dataDir, 'sandboxes', sandboxId, 'workspace')}`);
} finally {
  await stack.close();
  await llm.close();
}
process.exit(0);
