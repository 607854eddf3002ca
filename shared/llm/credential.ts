import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * The LLM gateway credential a sandbox holds for one conversation: `acsl.<claims>.<HMAC>`, where
 * claims are base64url JSON (user, organization, conversation, the conversation's key version, the
 * sandbox and its generation, an expiry, a hash of the models the plan allowed at minting). Derived,
 * never stored: the HMAC-SHA256 under the same sealed service key as conversation keys
 * (`systemKey('conversation-keys')`), with its own domain label so neither kind verifies as the other.
 *
 * Revocation is by state the gateway reads at every call (docs/platform-llms.md): a bumped conversation
 * key version (revoke, delete), a sandbox no longer RUNNING or in another generation (pause, suspension,
 * stop: a resume mints a new one), the owner or the organization suspended, a plan whose allowed models changed.
 */
const PREFIX = 'acsl.';
const PATTERN = /^acsl\.([A-Za-z0-9_-]{10,1400})\.([A-Za-z0-9_-]{43})$/;
/** How long a credential is valid: an hour; the sandbox fetches its start configuration again for a fresh one. */
export const LLM_CREDENTIAL_SECONDS = 3600;

export interface LlmClaims {
  /** The conversation's owner. */
  u: string;
  /** The organization that pays. */
  o: string;
  /** The conversation. */
  c: string;
  /** The conversation's key version at minting. */
  v: number;
  /** The sandbox the conversation runs in, and its generation. */
  s: string;
  g: number;
  /** Expiry, epoch seconds. */
  e: number;
  /** Issued at, epoch seconds: the sandbox renews when a sixth of the lifetime (at most ten minutes) is left. */
  i?: number;
  /** modelsHash of the plan's allowed platform models at minting. */
  m: string;
  /** The conversation's budget (`max_budget_per_task`) in micro-USD; absent: none. */
  b?: number;
}

export const isLlmCredential = (key: string) => key.startsWith(PREFIX);

export class LlmCredentials {
  constructor(
    private readonly secret: () => Promise<Buffer>,
    private readonly now: () => number = Date.now,
  ) {}

  async mint(claims: Omit<LlmClaims, 'e' | 'i'>, seconds = LLM_CREDENTIAL_SECONDS): Promise<string> {
    const issued = Math.floor(this.now() / 1000);
    const full: LlmClaims = { ...claims, e: issued + seconds, i: issued };
    const body = Buffer.from(JSON.stringify(full), 'utf8').toString('base64url');
    return `${PREFIX}${body}.${await this.mac(body)}`;
  }

  /** The claims of a well-formed, authentic, unexpired credential; null otherwise (the caller checks revocation). */
  async verify(key: string): Promise<LlmClaims | null> {
    const m = PATTERN.exec(key);
    if (!m) return null;
    const [, body, mac] = m as unknown as [string, string, string];
    const expected = Buffer.from(await this.mac(body), 'base64url');
    const actual = Buffer.from(mac, 'base64url');
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    let claims: LlmClaims;
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as LlmClaims;
    } catch {
      return null;
    }
    if (typeof claims.e !== 'number' || claims.e * 1000 <= this.now()) return null;
    return claims;
  }

  private async mac(body: string): Promise<string> {
    return createHmac('sha256', await this.secret())
      .update(`llm-credential\n${body}`)
      .digest('base64url');
  }
}
