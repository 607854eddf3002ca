import { ServiceSandboxControl } from '#shared/conversations/service-sandbox-control.ts';
import type { ServiceContext } from '#shared/services.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

/** What the conversation services drive sandboxes through: the user's sandbox API. */
export const sandboxControl = (c: ServiceContext) => new ServiceSandboxControl(() => c.use(sandboxes));
