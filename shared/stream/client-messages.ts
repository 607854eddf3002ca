import { initialMessageSchema } from '#shared/conversations/model.ts';
import { sendMessage } from '#shared/conversations/operations.ts';
import { ApiError } from '#shared/http/errors.ts';
import type { Request } from '#shared/http/operation.ts';
import type { Services } from '#shared/services.ts';
import { frameRefusal } from '#shared/stream/frame-limits.ts';
import { isAuthFrame } from '#shared/stream/first-message-auth.ts';
import { CLOSE } from '#shared/stream/messages.ts';
import { PING_ACTION } from '#shared/stream/socket-stream.ts';

/** The close code and reason for a client message that could not be relayed; null when it was. */
export type RelayOutcome = { code: number; reason: string } | null;

/**
 * What a client may send on the stream: a user message, `{"role": "user", "content": [...], "run": true}`
 * (the OpenHands V1 UI sends its messages this way), relayed exactly as
 * `POST /api/conversations/{conversation_id}/events` (the `sendMessage` operation). Anything else
 * closes the connection with 1007 and the reason; a refusal of the relay closes it with 4000 + its
 * HTTP status (e.g. 4409 when the sandbox is gone) and the detail, the one answer a socket client reads.
 */
export async function relayClientMessage(
  text: string,
  grant: { userId: string; conversationId: string },
  services: Services,
): Promise<RelayOutcome> {
  const refused = frameRefusal(text);
  if (refused) return refused;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { code: CLOSE.invalidMessage, reason: 'A message must be JSON: {"role": "user", "content": [...]}' };
  }
  if ((raw as { action?: unknown } | null)?.action === PING_ACTION) return null; // a keep-alive, not a message
  if (isAuthFrame(raw)) return null; // a redundant auth frame after the stream opened: ignored, as the agent server does
  const body = initialMessageSchema.safeParse(raw);
  if (!body.success) {
    const issue = body.error.issues[0]!;
    return {
      code: CLOSE.invalidMessage,
      reason: `${issue.path.join('.') || 'message'}: ${issue.message}`.slice(0, 120),
    };
  }
  try {
    const req = {
      userId: grant.userId,
      params: { conversation_id: grant.conversationId },
      body: body.data,
      rawBody: raw,
    } as unknown as Request<unknown>;
    await sendMessage.run(req, services);
    return null;
  } catch (err) {
    if (err instanceof ApiError && err.status < 500)
      return { code: 4000 + err.status, reason: err.message.slice(0, 120) };
    throw err;
  }
}
