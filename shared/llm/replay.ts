import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Sealer } from '#shared/secrets/sealer.ts';

/*
 * The gateway's `Idempotency-Key` (docs/platform-llms.md, "Idempotency-Key"): the first answer of a call
 * is kept so that a repeat with the same key and body gets it back, charged nothing. Kept as it was sent
 * (status, headers, body; a stream's SSE bytes), gzip-compressed, sealed, and bounded in size.
 */

/** How long a key is kept (per conversation): the header's convention, as the API's own idempotent creates. */
export const LLM_IDEMPOTENCY_KEEP_SECONDS = 24 * 60 * 60;
/**
 * The most a kept answer may take, compressed and sealed: the keys table's items are at most 400 KB. A larger
 * answer is not kept; a repeat of its key is a 409 `idempotency_answer_too_large` (nothing forwarded or charged).
 */
export const LLM_REPLAY_MAX_BYTES = 300 * 1024;
/** What the gateway captures of an answer before it gives up keeping it (a bound on memory, not on the answer). */
export const LLM_REPLAY_MAX_RAW_BYTES = 8 * 1024 * 1024;

/** An answer as it was sent. */
export interface LlmAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A sealed answer: AES-256-GCM with a key of its own (`iv | tag | ciphertext` of the gzipped answer),
 * that key sealed by the deployment's sealer (KMS on AWS, whose Encrypt takes at most 4 KB: an answer is
 * larger, its key is not) for the conversation, so a sealed answer copied to another conversation does not open.
 */
export interface SealedAnswer {
  key: string;
  blob: Uint8Array;
}

const contextOf = (conversationId: string) => `llm-answer#${conversationId}`;

/** Seals an answer for its conversation; undefined when it is over `LLM_REPLAY_MAX_BYTES`. */
export async function sealAnswer(
  sealer: Sealer,
  conversationId: string,
  answer: LlmAnswer,
): Promise<SealedAnswer | undefined> {
  const packed = gzipSync(Buffer.from(JSON.stringify(answer), 'utf8'));
  // iv (12) + tag (16) + the ciphertext (as long as the plaintext) + the sealed key.
  if (packed.length + 28 + 512 > LLM_REPLAY_MAX_BYTES) return undefined;
  const dataKey = randomBytes(32);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', dataKey, iv);
  cipher.setAAD(Buffer.from(contextOf(conversationId), 'utf8'));
  const ct = Buffer.concat([cipher.update(packed), cipher.final()]);
  return {
    key: await sealer.seal(dataKey.toString('base64'), contextOf(conversationId)),
    blob: Buffer.concat([iv, cipher.getAuthTag(), ct]),
  };
}

/** Opens a sealed answer of `conversationId`; throws if it was altered or belongs to another conversation. */
export async function openAnswer(sealer: Sealer, conversationId: string, sealed: SealedAnswer): Promise<LlmAnswer> {
  const dataKey = Buffer.from(await sealer.open(sealed.key, contextOf(conversationId)), 'base64');
  const blob = Buffer.from(sealed.blob);
  const decipher = createDecipheriv('aes-256-gcm', dataKey, blob.subarray(0, 12));
  decipher.setAAD(Buffer.from(contextOf(conversationId), 'utf8'));
  decipher.setAuthTag(blob.subarray(12, 28));
  const packed = Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]);
  return JSON.parse(gunzipSync(packed).toString('utf8')) as LlmAnswer;
}

/** JSON with object members in code-point order at every depth: the same request, however its members were ordered. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** What identifies a request under a key: the path (the API) and the body, as a SHA-256 of canonical JSON. */
export function requestHash(path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${path}\n${canonicalJson(body)}`)
    .digest('base64url');
}

/**
 * Records an answer as it is sent (the sink's head and writes, passed through unchanged), up to
 * `LLM_REPLAY_MAX_RAW_BYTES`; past that it stops recording and the answer is too large to keep.
 */
export class AnswerRecorder {
  status = 0;
  headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  overflowed = false;

  head(status: number, headers: Record<string, string>): void {
    this.status = status;
    this.headers = { ...headers };
  }

  write(chunk: Uint8Array | string): void {
    if (this.overflowed) return;
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    this.bytes += b.length;
    if (this.bytes > LLM_REPLAY_MAX_RAW_BYTES) {
      this.overflowed = true;
      this.chunks.length = 0;
      return;
    }
    this.chunks.push(b);
  }

  /** The answer as sent (undefined once it overflowed). */
  answer(): LlmAnswer | undefined {
    if (this.overflowed) return undefined;
    return { status: this.status, headers: this.headers, body: Buffer.concat(this.chunks).toString('utf8') };
  }
}
