import * as z from '#shared/zod.ts';
import { sandboxStatuses, type SandboxStatus } from '#shared/protocol.ts';

/** STARTING and RUNNING sandboxes hold (or are about to hold) a process or task. */
export const isLive = (status: SandboxStatus) => status === 'STARTING' || status === 'RUNNING';

export const exposedUrlSchema = z.lazy(() => z.object({ name: z.string(), url: z.string() }));

/** One start's phases (`StartPhases` of sandbox-store.ts), as `GET /api/v1/sandboxes` shows them. */
export const startPhasesSchema = z.lazy(() =>
  z.object({
    warm: z.boolean(),
    cold_reason: z.optional(z.string()),
    requested_at: z.string(),
    claim_ms: z.optional(z.number()),
    claimed_at: z.optional(
      z.string().check(z.meta({ description: 'When a standby became this sandbox: where billing starts' })),
    ),
    run_task_ms: z.optional(z.number()),
    provisioning_ms: z.optional(z.number()),
    pending_ms: z.optional(z.number()),
    container_started_at: z.optional(z.string()),
    check_in_ms: z.optional(z.number()),
    restore_ms: z.optional(z.number()),
    total_ms: z.optional(z.number()),
  }),
);

/** SandboxInfo, OpenHands' members plus `detail`, `contained`, `updated_at` and `last_activity_at`. */
export const sandboxInfoSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_spec_id: z.string(),
    status: z.enum(sandboxStatuses),
    session_api_key: z.nullable(z.string()).check(
      z.meta({
        description:
          "Always null: a sandbox's own key reaches only the sandbox; clients use a conversation's session_api_key",
      }),
    ),
    exposed_urls: z.nullable(z.array(exposedUrlSchema)).check(
      z.meta({
        description: 'Sandboxes take no inbound connections, so this is [] while RUNNING and null otherwise',
      }),
    ),
    detail: z
      .nullable(z.string())
      .check(z.meta({ description: 'Why the sandbox is in ERROR, MISSING or PAUSED by the service' })),
    contained: z.boolean().check(
      z.meta({
        description:
          'false when the sandbox ran as a plain local process, without bubblewrap or Seatbelt: its agent can reach everything the server can',
      }),
    ),
    created_at: z.string(),
    updated_at: z.string(),
    last_activity_at: z
      .string()
      .check(z.meta({ description: 'Last agent activity (or start/resume); idle sandboxes are paused' })),
    start_phases: z.nullable(startPhasesSchema).check(
      z.meta({
        description:
          "How the current generation's start went, in milliseconds: warm (a standby claimed) or cold with the reason",
      }),
    ),
  }),
);
export type SandboxInfo = z.output<typeof sandboxInfoSchema>;

export const sandboxPageSchema = z.lazy(() =>
  z.object({ items: z.array(sandboxInfoSchema), next_page_id: z.nullable(z.string()) }),
);
export const successSchema = z.lazy(() => z.object({ success: z.literal(true) }));

/** The header that names sandboxes paused to respect MAX_RUNNING_SANDBOXES (comma-separated ids). */
export const PAUSED_HEADER = 'x-paused-sandbox-ids';
