import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';

export const editorCommands = ['view', 'create', 'str_replace', 'insert', 'undo_edit'] as const;

export const editorArgsSchema = z.object({
  command: z.enum(editorCommands).describe('view, create, str_replace, insert or undo_edit'),
  path: z.string().min(1).describe('Path of the file or directory, absolute or relative to the workspace'),
  file_text: z.string().optional().describe('create: the content of the new file'),
  old_str: z.string().optional().describe('str_replace: the exact text to replace; it must occur exactly once'),
  new_str: z.string().optional().describe('str_replace: the replacement; insert: the text to insert'),
  insert_line: z.number().int().min(0).optional().describe('insert: the text goes after this line (0 = at the top)'),
  view_range: z
    .array(z.number().int())
    .length(2)
    .optional()
    .describe('view: [first, last] line numbers, 1-based; last = -1 means to the end'),
});
export type EditorArgs = z.infer<typeof editorArgsSchema>;

/** What an editor command did; the contents before and after are what OpenHands' UI shows as a diff. */
export interface EditResult {
  output: string;
  path: string;
  prevExist: boolean;
  oldContent: string | null;
  newContent: string | null;
}

/** A mistake the model can correct (bad path, text not found): reported to it, not a crash. */
export class EditorError extends Error {}

const SNIPPET_CONTEXT = 4;
const MAX_VIEW_CHARS = 30_000;

const numbered = (lines: string[], firstLine: number) =>
  lines.map((l, i) => `${String(firstLine + i).padStart(6)}\t${l}`).join('\n');

/**
 * View, create and edit text files inside one workspace directory. Every path is resolved against
 * the workspace and must stay inside it, symbolic links included. Each edit is remembered per file so
 * `undo_edit` can restore the previous content (a file that `create` made is removed again).
 */
export class FileEditor {
  readonly #root: string;
  readonly #history = new Map<string, (string | null)[]>();

  constructor(workspaceDir: string) {
    this.#root = realpathSync(workspaceDir);
  }

  /** The absolute path inside the workspace that `input` names, or an EditorError. */
  resolve(input: string): string {
    return this.#resolve(input);
  }

  async run(args: EditorArgs): Promise<EditResult> {
    const path = this.#resolve(args.path);
    if (args.command === 'view')
      return {
        path,
        output: await this.#view(path, args.view_range),
        prevExist: true,
        oldContent: null,
        newContent: null,
      };
    const before = existsSync(path) ? await readFile(path, 'utf8').catch(() => null) : null;
    const prevExist = existsSync(path);
    let output: string;
    switch (args.command) {
      case 'create':
        output = await this.#create(path, args.file_text);
        break;
      case 'str_replace':
        output = await this.#replace(path, args.old_str, args.new_str ?? '');
        break;
      case 'insert':
        output = await this.#insert(path, args.insert_line, args.new_str);
        break;
      case 'undo_edit':
        output = await this.#undo(path);
        break;
    }
    const after = existsSync(path) ? await readFile(path, 'utf8').catch(() => null) : null;
    return { path, output, prevExist, oldContent: before, newContent: after };
  }

  /** Absolute path inside the workspace, or an EditorError. */
  #resolve(input: string): string {
    const target = isAbsolute(input) ? resolve(input) : resolve(this.#root, input);
    // Resolve links through the nearest existing ancestor, so `link/new-file` cannot escape either.
    let existing = target;
    while (!existsSync(existing)) existing = dirname(existing);
    const real = join(realpathSync(existing), relative(existing, target));
    const rel = relative(this.#root, real);
    if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
      throw new EditorError(`The path ${input} is outside the workspace ${this.#root}.`);
    }
    return real;
  }

  async #readText(path: string): Promise<string> {
    const info = await stat(path).catch(() => null);
    if (!info) throw new EditorError(`The path ${path} does not exist.`);
    if (info.isDirectory()) throw new EditorError(`The path ${path} is a directory; this command needs a file.`);
    const buf = await readFile(path);
    if (buf.subarray(0, 8192).includes(0))
      throw new EditorError(`The file ${path} is binary; it cannot be shown or edited as text.`);
    return buf.toString('utf8');
  }

  async #view(path: string, range?: number[]): Promise<string> {
    const info = await stat(path).catch(() => null);
    if (!info) throw new EditorError(`The path ${path} does not exist.`);
    if (info.isDirectory()) {
      if (range) throw new EditorError('view_range cannot be used on a directory.');
      const entries = await this.#list(path, 2);
      return `Files and directories up to 2 levels deep in ${path}, hidden items excluded:\n${[path, ...entries].join('\n')}`;
    }
    const lines = (await this.#readText(path)).split('\n');
    let first = 1;
    let last = lines.length;
    if (range) {
      const [a, b] = range as [number, number];
      if (a < 1 || a > lines.length)
        throw new EditorError(`view_range: first line ${a} must be between 1 and ${lines.length}.`);
      if (b !== -1 && (b < a || b > lines.length))
        throw new EditorError(`view_range: last line ${b} must be -1 or between ${a} and ${lines.length}.`);
      first = a;
      last = b === -1 ? lines.length : b;
    }
    let text = numbered(lines.slice(first - 1, last), first);
    if (text.length > MAX_VIEW_CHARS) {
      text = `${text.slice(0, MAX_VIEW_CHARS)}\n[... file truncated: view a smaller view_range to see the rest ...]`;
    }
    return `Here's the result of running \`cat -n\` on ${path}:\n${text}`;
  }

  async #list(dir: string, depth: number): Promise<string[]> {
    const out: string[] = [];
    const entries = await readdir(dir, { withFileTypes: true });
    for (const e of entries.sort((x, y) => x.name.localeCompare(y.name))) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const full = join(dir, e.name);
      out.push(e.isDirectory() ? `${full}/` : full);
      if (e.isDirectory() && depth > 1) out.push(...(await this.#list(full, depth - 1)));
    }
    return out;
  }

  async #create(path: string, text: string | undefined): Promise<string> {
    if (text === undefined) throw new EditorError('create needs file_text.');
    if (existsSync(path))
      throw new EditorError(`The file ${path} already exists; create cannot overwrite it. Use str_replace to edit it.`);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    this.#remember(path, null);
    return `File created successfully at: ${path}`;
  }

  async #replace(path: string, oldStr: string | undefined, newStr: string): Promise<string> {
    if (!oldStr) throw new EditorError('str_replace needs a non-empty old_str.');
    const text = await this.#readText(path);
    const at: number[] = [];
    for (let i = text.indexOf(oldStr); i !== -1; i = text.indexOf(oldStr, i + 1)) at.push(i);
    if (at.length === 0)
      throw new EditorError(`No replacement was performed: old_str did not appear verbatim in ${path}.`);
    if (at.length > 1) {
      const lines = at.map((i) => text.slice(0, i).split('\n').length);
      throw new EditorError(
        `No replacement was performed: old_str occurs ${at.length} times, at lines ${lines.join(', ')}. Include more context so it is unique.`,
      );
    }
    const start = at[0]!;
    const updated = text.slice(0, start) + newStr + text.slice(start + oldStr.length);
    await writeFile(path, updated);
    this.#remember(path, text);
    const firstLine = text.slice(0, start).split('\n').length;
    return this.#edited(path, updated, firstLine, firstLine + newStr.split('\n').length - 1);
  }

  async #insert(path: string, line: number | undefined, newStr: string | undefined): Promise<string> {
    if (line === undefined) throw new EditorError('insert needs insert_line.');
    if (newStr === undefined) throw new EditorError('insert needs new_str.');
    const text = await this.#readText(path);
    const lines = text.split('\n');
    if (line > lines.length) throw new EditorError(`insert_line ${line} must be between 0 and ${lines.length}.`);
    const added = newStr.split('\n');
    const updated = [...lines.slice(0, line), ...added, ...lines.slice(line)].join('\n');
    await writeFile(path, updated);
    this.#remember(path, text);
    return this.#edited(path, updated, line + 1, line + added.length);
  }

  async #undo(path: string): Promise<string> {
    const previous = this.#history.get(path);
    if (!previous?.length) throw new EditorError(`No edit of ${path} to undo.`);
    const content = previous.pop()!;
    if (content === null) {
      await rm(path, { force: true });
      return `Undid the creation of ${path}: the file is removed.`;
    }
    await writeFile(path, content);
    return `Last edit to ${path} undone. Its content is now:\n${numbered(content.split('\n'), 1).slice(0, MAX_VIEW_CHARS)}`;
  }

  #remember(path: string, previous: string | null): void {
    const list = this.#history.get(path) ?? [];
    list.push(previous);
    this.#history.set(path, list);
  }

  #edited(path: string, updated: string, firstChanged: number, lastChanged: number): string {
    const lines = updated.split('\n');
    const from = Math.max(1, firstChanged - SNIPPET_CONTEXT);
    const to = Math.min(lines.length, lastChanged + SNIPPET_CONTEXT);
    return `The file ${path} has been edited. Here's the result of running \`cat -n\` on a snippet of it:\n${numbered(lines.slice(from - 1, to), from)}\nReview the changes and make sure they are as expected.`;
  }
}
