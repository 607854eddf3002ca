import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';

/**
 * Where sandbox specs come from. Specs are fixed for the life of a deployment (or of `npm start`),
 * so listing one is never a call to ECS. Adapters: `fileSpecRegistry` (local config file) and
 * `envSpecRegistry` (the JSON the CDK app writes into `SANDBOX_SPECS`).
 */
export interface SpecRegistry {
  /** Every spec, the default first. */
  list(): readonly SandboxSpec[];
  /** The spec, or undefined for an unknown id. */
  get(id: string): SandboxSpec | undefined;
  /** The spec used when a start names none. */
  defaultSpec(): SandboxSpec;
}

/** A registry over a fixed, validated list (both adapters build one). */
export class ListSpecRegistry implements SpecRegistry {
  private readonly byId: Map<string, SandboxSpec>;

  constructor(private readonly specs: readonly SandboxSpec[]) {
    if (specs.length === 0) throw new Error('Configuration error: no sandbox spec is configured');
    this.byId = new Map(specs.map((s) => [s.id, s]));
    if (this.byId.size !== specs.length) throw new Error('Configuration error: sandbox spec ids must be unique');
  }

  list(): readonly SandboxSpec[] {
    return this.specs;
  }

  get(id: string): SandboxSpec | undefined {
    return this.byId.get(id);
  }

  defaultSpec(): SandboxSpec {
    return this.specs[0]!;
  }
}
