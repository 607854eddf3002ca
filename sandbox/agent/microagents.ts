import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/**
 * Repository microagents, as OpenHands reads them: Markdown files under `.openhands/microagents/` in
 * the workspace, each with optional front matter (`name`, `triggers`). One without triggers (such as
 * `repo.md`) always applies and joins the instructions; one with triggers applies to a user message
 * that contains one of its trigger words (case-insensitive).
 */
export interface Microagent {
  name: string;
  triggers: string[];
  content: string;
}

const DIR = join('.openhands', 'microagents');
const MAX_FILES = 100;
const MAX_CHARS = 20_000;

/** Front matter between `---` lines: `name: x` and `triggers:` as `[a, b]` or a `- a` list. */
function parse(text: string, fallbackName: string): Microagent {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (!m) return { name: fallbackName, triggers: [], content: text.trim() };
  const meta = m[1]!;
  const unquote = (s: string) => s.trim().replace(/^["']|["']$/g, '');
  const name = /^name:\s*(.+)$/m.exec(meta)?.[1];
  let triggers: string[] = [];
  const inline = /^triggers:\s*\[(.*)\]\s*$/m.exec(meta);
  if (inline) triggers = inline[1]!.split(',').map(unquote);
  else {
    const block = /^triggers:\s*\n((?:\s*-\s*.+\n?)+)/m.exec(meta);
    if (block) triggers = block[1]!.split('\n').map((l) => unquote(l.replace(/^\s*-\s*/, '')));
  }
  return {
    name: name ? unquote(name) : fallbackName,
    triggers: triggers.filter(Boolean),
    content: text.slice(m[0].length).trim(),
  };
}

/** The microagents of the workspace's repository; none when it has no `.openhands/microagents/`. */
export async function loadMicroagents(workspaceDir: string): Promise<Microagent[]> {
  const root = join(workspaceDir, DIR);
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (files.length >= MAX_FILES) return;
      const full = join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile() && e.name.endsWith('.md') && e.name.toLowerCase() !== 'readme.md') files.push(full);
    }
  };
  await walk(root);
  const agents: Microagent[] = [];
  for (const f of files) {
    const text = (await readFile(f, 'utf8')).slice(0, MAX_CHARS);
    agents.push(parse(text, relative(root, f).replace(/\.md$/, '')));
  }
  return agents;
}

/** The microagents with triggers that a message activates. */
export function triggered(agents: Microagent[], message: string): Microagent[] {
  const text = message.toLowerCase();
  return agents.filter((a) => a.triggers.some((t) => text.includes(t.toLowerCase())));
}
