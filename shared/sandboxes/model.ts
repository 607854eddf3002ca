import * as z from 'zod';

export const sandboxStatuses = ['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING'] as const;
export type SandboxStatus = (typeof sandboxStatuses)[number];

/** STARTING and RUNNING sandboxes hold (or are about to hold) a process or task. */
export const isLive = (status: SandboxStatus) => status === 'STARTING' || status === 'RUNNING';

/** Path ids are only looked up, never trusted: anything unknown is a 404. */
export const sandboxIdParam = z.string().min(1).max(128);

export const exposedUrlSchema = z.object({ name: z.string(), url: z.string() });

/** SandboxInfo, OpenHands' members plus `detail`, `contained`, `updated_at` and `last_activity_at`. */
export const sandboxInfoSchema = z.object({
  id: z.string(),
  created_by_user_id: z.string(),
  sandbox_spec_id: z.string(),
  status: z.enum(sandboxStatuses),
  session_api_key: z.string().nullable().meta({ description: "Always null: a sandbox's own key reaches only the sandbox; clients use a conversation's session_api_key" }),
  exposed_urls: z
    .array(exposedUrlSchema)
    .nullable()
    .meta({ description: 'Sandboxes take no inbound connections, so this is [] while RUNNING and null otherwise' }),
  detail: z.string().nullable().meta({ description: 'Why the sandbox is in ERROR, MISSING or PAUSED by the service' }),
  contained: z.boolean().meta({
    description: 'false when the sandbox ran as a plain local process, without bubblewrap or Seatbelt: its agent can reach everything the server can',
  }),
  created_at: z.string(),
  updated_at: z.string(),
  last_activity_at: z.string().meta({ description: 'Last agent activity (or start/resume); idle sandboxes are paused' }),
});
export type SandboxInfo = z.output<typeof sandboxInfoSchema>;

export const sandboxPageSchema = z.object({ items: z.array(sandboxInfoSchema), next_page_id: z.string().nullable() });
export const successSchema = z.object({ success: z.literal(true) });

/** The header that names sandboxes paused to respect MAX_RUNNING_SANDBOXES (comma-separated ids). */
export const PAUSED_HEADER = 'x-paused-sandbox-ids';

// --- The bridge (sandbox -> control plane) ------------------------------------------------------

export const checkInBodySchema = z.object({
  version: z.string().max(64).default('unknown'),
  capabilities: z.array(z.string().max(64)).max(50).default([]),
});
export const checkInResponseSchema = z.object({
  sandbox_id: z.string(),
  session_api_key: z.string(),
  heartbeat_seconds: z.number(),
  poll_wait_seconds: z.number(),
});

export const heartbeatBodySchema = z.object({
  active: z.boolean().default(false).meta({ description: 'true when the agent did work since the last heartbeat' }),
});
export const heartbeatResponseSchema = z.object({
  status: z.enum(sandboxStatuses),
  command_seq: z.number().int().meta({ description: 'The number of the last command queued for the sandbox (0: none yet)' }),
});

export const commandSchema = z.object({
  seq: z.number().int().meta({ description: 'Position in the queue; 0 for the synthetic stop command' }),
  type: z.string(),
  payload: z.unknown(),
  created_at: z.string(),
});
export type SandboxCommand = z.output<typeof commandSchema>;
export const commandsResponseSchema = z.object({ commands: z.array(commandSchema) });

/** What another service may queue for a sandbox (e.g. `start_conversation`, `send_message`). */
export const commandInputSchema = z.object({
  type: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'command type: lower-case snake case'),
  payload: z.unknown().optional(),
});
export type CommandInput = z.output<typeof commandInputSchema>;
