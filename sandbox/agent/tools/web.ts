import { z } from 'zod';
import type { AgentTool, ToolOutcome } from '#sandbox/agent/tools/toolset.ts';

/** Tavily's search API, as OpenHands uses it for web search; the base URL is configurable (tests use loopback). */
export const TAVILY_BASE_URL = 'https://api.tavily.com';

export interface WebToolOptions {
  /** `search_api_key` of the settings (a Tavily key). */
  apiKey: string;
  baseUrl?: string | null;
  /** Per request (default 30 s). */
  timeoutMs?: number;
}

const MAX_BODY_BYTES = 5 * 1024 * 1024;

const searchArgs = z.object({
  query: z.string().min(1).max(400).describe('What to search the web for'),
  max_results: z.number().int().min(1).max(20).optional().describe('How many results (default 5)'),
});
const fetchArgs = z.object({
  url: z.string().url().describe('The http(s) URL of the page'),
  max_length: z
    .number()
    .int()
    .min(100)
    .max(100_000)
    .optional()
    .describe('Characters to return at most (default 20,000)'),
  start_index: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Start at this character, to read on where a previous call was cut (default 0)'),
});

const outcome = (kind: string, text: string, isError: boolean, extra: Record<string, unknown> = {}): ToolOutcome => ({
  observation: {
    kind,
    output: text,
    content: [{ type: 'text', text }],
    is_error: isError,
    error: isError ? text : null,
    ...extra,
  },
  text: isError ? `ERROR: ${text}` : text,
  isError,
});

/** `web_search` (Tavily) and `fetch` (a page as text). */
export function webTools(o: WebToolOptions): AgentTool[] {
  const base = (o.baseUrl?.trim() || TAVILY_BASE_URL).replace(/\/+$/, '');
  const timeoutMs = o.timeoutMs ?? 30_000;
  return [
    {
      name: 'web_search',
      description:
        'Search the web (Tavily). Returns titles, URLs and extracts of the best results; read a result in full with `fetch`.',
      input: searchArgs,
      action: (args) => ({ kind: 'WebSearchAction', ...args }),
      run: async (raw) => {
        const args = searchArgs.parse(raw);
        try {
          const res = await fetch(`${base}/search`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${o.apiKey}` },
            body: JSON.stringify({
              query: args.query,
              max_results: args.max_results ?? 5,
              search_depth: 'basic',
              include_answer: true,
            }),
            signal: AbortSignal.timeout(timeoutMs),
          });
          const body = await res.text();
          if (!res.ok)
            return outcome(
              'WebSearchObservation',
              `The search failed: HTTP ${res.status} ${body.slice(0, 300)}${res.status === 401 ? ' (check search_api_key)' : ''}`,
              true,
              { query: args.query },
            );
          const data = JSON.parse(body) as {
            answer?: string | null;
            results?: { title?: string; url?: string; content?: string }[];
          };
          const results = data.results ?? [];
          const text = [
            data.answer ? `Answer: ${data.answer}\n` : '',
            results.length
              ? results
                  .map(
                    (r, i) =>
                      `${i + 1}. ${r.title ?? '(no title)'}\n   ${r.url ?? ''}\n   ${(r.content ?? '').replace(/\s+/g, ' ').slice(0, 1000)}`,
                  )
                  .join('\n')
              : 'No results.',
          ].join('');
          return outcome('WebSearchObservation', text, false, { query: args.query, results });
        } catch (err) {
          return outcome('WebSearchObservation', `The search failed: ${(err as Error).message}`, true, {
            query: args.query,
          });
        }
      },
    },
    {
      name: 'fetch',
      description:
        'Fetch a web page (http or https) and return it as plain text (HTML tags removed), cut at max_length; use start_index to read on.',
      input: fetchArgs,
      action: (args) => ({ kind: 'FetchAction', ...args }),
      run: async (raw) => {
        const args = fetchArgs.parse(raw);
        if (!/^https?:\/\//i.test(args.url))
          return outcome('FetchObservation', `Only http and https URLs can be fetched, not ${args.url}.`, true, {
            url: args.url,
          });
        try {
          const res = await fetch(args.url, {
            redirect: 'follow',
            headers: { accept: 'text/html,text/plain,application/json;q=0.9,*/*;q=0.5' },
            signal: AbortSignal.timeout(timeoutMs),
          });
          const type = res.headers.get('content-type') ?? '';
          const body = await readCapped(res);
          if (!res.ok)
            return outcome('FetchObservation', `${args.url} answered HTTP ${res.status}: ${body.slice(0, 300)}`, true, {
              url: args.url,
            });
          if (type && !/text\/|json|xml|javascript/i.test(type))
            return outcome('FetchObservation', `${args.url} is ${type}, not text.`, true, { url: args.url });
          const whole = /html/i.test(type) || /^\s*<(!doctype|html)/i.test(body) ? htmlToText(body) : body;
          const start = args.start_index ?? 0;
          const max = args.max_length ?? 20_000;
          let text = whole.slice(start, start + max);
          if (start + max < whole.length)
            text += `\n[... cut at ${max} characters of ${whole.length}: call fetch again with start_index ${start + max} to read on ...]`;
          return outcome('FetchObservation', `Contents of ${args.url}:\n${text}`, false, { url: args.url });
        } catch (err) {
          return outcome('FetchObservation', `Could not fetch ${args.url}: ${(err as Error).message}`, true, {
            url: args.url,
          });
        }
      },
    },
  ];
}

/** The body as text, at most MAX_BODY_BYTES of it (a huge page costs bounded memory). */
async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_BODY_BYTES) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Readable text of an HTML page: scripts, styles and tags removed, block elements as line breaks. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(
      /<(br|\/p|\/div|\/h[1-6]|\/ul|\/ol|\/title|\/tr|\/pre|\/blockquote|\/section|\/article|\/header|\/footer)\b[^>]*>/gi,
      '\n',
    )
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#') {
        const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return Number.isFinite(code) && code < 0x110000 ? String.fromCodePoint(code) : m;
      }
      return ENTITIES[e.toLowerCase()] ?? m;
    })
    .replace(/[ \t\f\v\r]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
