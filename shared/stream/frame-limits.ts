import { DEFAULT_MAX_BODY_BYTES, MAX_JSON_DEPTH, nestedDeeperThan } from '#shared/http/json-depth.ts';

/** A client message may be as large as the HTTP body it stands for (`POST .../events`), and no larger. */
export const MAX_CLIENT_MESSAGE_BYTES = DEFAULT_MAX_BODY_BYTES;

/** Close codes for a frame refused before it is parsed (RFC 6455: 1009 too big, 1007 not acceptable). */
const TOO_BIG = 1009;
const INVALID = 1007;

/**
 * The limits HTTP applies to a JSON body, for a message a client sends on the event stream (locally
 * and on AWS): its size, and its nesting (`MAX_JSON_DEPTH`), checked before `JSON.parse` so a frame
 * of 100,000 `[` costs one linear scan and no recursion. Null when the frame is within both.
 */
export function frameRefusal(text: string): { code: number; reason: string } | null {
  if (Buffer.byteLength(text) > MAX_CLIENT_MESSAGE_BYTES)
    return { code: TOO_BIG, reason: `A message may have at most ${MAX_CLIENT_MESSAGE_BYTES} bytes` };
  if (nestedDeeperThan(text, MAX_JSON_DEPTH))
    return { code: INVALID, reason: `A message may nest at most ${MAX_JSON_DEPTH} levels` };
  return null;
}
