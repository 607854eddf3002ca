import { ServiceSandboxControl } from '#shared/conversations/service-sandbox-control.ts';
import type { ServiceContext } from '#shared/services.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

/** What the conversation services drive sandboxes through: the user's API and the bridge's services. */
export const sandboxControl = (c: ServiceContext) =>
  new ServiceSandboxControl(
    () => c.use(sandboxes),
    () => c.use(sandboxBridge),
  );
