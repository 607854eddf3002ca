import type { Tenant } from '#shared/plans/limits.ts';
import type { ConversationCommand, SandboxControl, SandboxSummary } from '#shared/conversations/sandbox-control.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';

const hostOf = (baseUrl: string) => new URL(baseUrl).host;

/** SandboxControl over the sandbox services (both deployments use this one adapter). */
export class ServiceSandboxControl implements SandboxControl {
  constructor(private readonly sandboxes: () => SandboxService) {}

  async start(userId: string, baseUrl: string, tenant: Tenant): Promise<SandboxSummary> {
    const { sandbox } = await this.sandboxes().start(userId, undefined, hostOf(baseUrl), tenant);
    return { id: sandbox.id, status: sandbox.status };
  }

  async find(userId: string, sandboxId: string): Promise<SandboxSummary | undefined> {
    const found = (await this.sandboxes().statuses([sandboxId])).get(sandboxId);
    return found && found.userId === userId ? { id: found.id, status: found.status, detail: found.detail } : undefined;
  }

  async statuses(ids: string[]): Promise<Map<string, SandboxSummary>> {
    if (!ids.length) return new Map();
    return this.sandboxes().statuses([...new Set(ids)]);
  }

  async resume(userId: string, sandboxId: string, baseUrl: string, tenant: Tenant): Promise<void> {
    await this.sandboxes().resume(userId, sandboxId, hostOf(baseUrl), tenant);
  }

  async send(userId: string, sandboxId: string, command: ConversationCommand): Promise<void> {
    const { type, ...payload } = command;
    // Conversation commands carry ids and user messages, never secrets (the sandbox fetches those
    // from the start-config webhook): stored as they are, so no KMS size limit applies.
    await this.sandboxes().enqueueCommand(userId, sandboxId, { type, payload });
  }

  async touch(sandboxId: string): Promise<void> {
    await this.sandboxes().recordActivity(sandboxId);
  }
}
