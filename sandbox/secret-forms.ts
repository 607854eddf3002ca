import type { StartConfig } from '#shared/protocol.ts';

/** Below this length a secret's encoded fragments are too short to mask without garbling ordinary text. */
const MIN_ENCODED_LENGTH = 8;

/**
 * The base64 text of `secret` as it appears inside the base64 of any longer value (`oauth2:<token>`
 * in a Basic auth header, a token in a JSON blob): for each of the three byte alignments, the
 * characters that depend on the secret's bytes only. Standard and URL-safe alphabets.
 */
function base64Fragments(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out: string[] = [];
  for (const offset of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const start = offset === 0 ? 0 : offset + 1; // characters mixing padding bytes and the secret's
    const end = (offset + bytes.length) % 3 === 0 ? encoded.length : encoded.length - 1; // the last one mixes what follows
    const fragment = encoded.slice(start, end);
    if (fragment.length >= MIN_ENCODED_LENGTH) out.push(fragment, fragment.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return out;
}

/** Every form in which `secret` may show in text: as is, URL-encoded (also form-style), and base64 at any alignment. */
export function secretForms(secret: string): string[] {
  const forms = new Set([secret]);
  if (secret.length >= MIN_ENCODED_LENGTH) {
    forms.add(encodeURIComponent(secret));
    forms.add(encodeURIComponent(secret).replaceAll('%20', '+'));
    for (const f of base64Fragments(secret)) forms.add(f);
  }
  return [...forms];
}

/** The token inside an `Authorization: Basic base64(user:token)` header. */
function basicToken(header: string | null | undefined): string[] {
  const encoded = /Basic\s+(\S+)/i.exec(header ?? '')?.[1];
  if (!encoded) return [];
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  return [encoded, decoded.slice(decoded.indexOf(':') + 1)];
}

/** Every secret a conversation's start configuration carries: what its events must never show. */
export function startConfigSecrets(config: StartConfig): string[] {
  const mcp = config.mcp_config;
  return [
    config.llm.api_key,
    ...Object.values(config.secrets),
    ...basicToken(config.repository?.auth_header),
    ...[...mcp.sse_servers, ...mcp.shttp_servers].map((s) => s.api_key ?? ''),
    ...mcp.stdio_servers.flatMap((s) => Object.values(s.env).map((v) => v ?? '')),
  ].filter((v) => v.length > 0);
}
