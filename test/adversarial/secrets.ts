import { randomBytes } from 'node:crypto';
import { secretForms } from '#sandbox/secret-forms.ts';

/** A recognisable fake secret: long enough that its encoded forms cannot match by chance. */
export const plant = (what: string, user: string) => `plant-${what}-${user}-${randomBytes(8).toString('hex')}`;

/**
 * Every form a planted value must never appear in: plain, URL-encoded, base64 of the value at any
 * alignment (so also inside `base64(oauth2:<value>)`), and `oauth2:<value>` itself.
 */
export function leakForms(secret: string): string[] {
  return [...new Set([...secretForms(secret), `oauth2:${secret}`, Buffer.from(`oauth2:${secret}`).toString('base64')])];
}

/** The planted secrets (by name) whose forms occur in `text`, with the form found. */
export function findLeaks(text: string, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    for (const form of leakForms(value)) if (text.includes(form)) found.push(`${name} as ${JSON.stringify(form)}`);
  }
  return found;
}
