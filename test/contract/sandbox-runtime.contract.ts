import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import {
  SandboxStartError,
  type RuntimeState,
  type SandboxRuntime,
  type StartRequest,
} from '#shared/sandboxes/runtime/sandbox-runtime.ts';

export interface RuntimeFixture {
  runtime: SandboxRuntime;
  /** A spec whose program runs until stopped. */
  spec: SandboxSpec;
  /** A spec the platform refuses to start. */
  badSpec: SandboxSpec;
  /** Lets asynchronous platform work finish (e.g. Fargate tasks still stopping); called between destroy calls. */
  settle?: () => Promise<void>;
  /** An independent view of what runs for a sandbox (OS processes, the fake ECS's tasks). */
  runningFor(sandboxId: string): Promise<number>;
  close?: () => Promise<void>;
}

/**
 * The SandboxRuntime contract, run against every adapter that can run here: the process adapter
 * for real, the Fargate adapter at the SDK boundary.
 */
export function sandboxRuntimeContract(name: string, setup: () => Promise<RuntimeFixture>): void {
  describe(`SandboxRuntime contract: ${name}`, () => {
    let f: RuntimeFixture;
    beforeAll(async () => {
      f = await setup();
    });
    afterAll(async () => {
      await f?.close?.();
    });

    const request = (sandboxId: string, generation: number, state?: RuntimeState, spec = f.spec): StartRequest => ({
      sandboxId,
      userId: 'contract-user',
      generation,
      spec,
      enrollmentToken: `enr_${randomUUID()}`,
      bridgeUrl: 'http://127.0.0.1:9',
      state,
    });

    async function destroyFully(sandboxId: string, generation: number, state: RuntimeState, ref?: string) {
      let out = { done: false, state };
      for (let round = 0; round < 5 && !out.done; round++) {
        out = await f.runtime.destroy({ sandboxId, generation, ref, state: out.state });
        if (!out.done) await f.settle?.();
      }
      return out;
    }

    it('starts an instance that status and list report as running', async () => {
      const id = randomUUID().replaceAll('-', '');
      const started = await f.runtime.start(request(id, 1));
      expect(started.ref).toEqual(expect.any(String));
      expect(await f.runtime.status({ sandboxId: id, generation: 1, ref: started.ref })).toBe('running');
      expect(await f.runtime.list()).toContainEqual({ sandboxId: id, generation: 1, ref: started.ref });
      expect(await f.runningFor(id)).toBe(1);
      await destroyFully(id, 1, started.state, started.ref);
    });

    it('pauses (stop), keeping its state, and resumes as a new generation on the same state', async () => {
      const id = randomUUID().replaceAll('-', '');
      const first = await f.runtime.start(request(id, 1));
      await f.runtime.stop({ sandboxId: id, generation: 1, ref: first.ref, state: first.state });
      expect(await f.runtime.status({ sandboxId: id, generation: 1, ref: first.ref })).toBe('stopped');
      expect((await f.runtime.list()).some((i) => i.sandboxId === id)).toBe(false);
      expect(await f.runningFor(id)).toBe(0);
      // Stopping twice is fine.
      await f.runtime.stop({ sandboxId: id, generation: 1, ref: first.ref, state: first.state });

      const second = await f.runtime.start(request(id, 2, first.state));
      expect(second.state).toEqual(first.state);
      expect(await f.runtime.status({ sandboxId: id, generation: 2, ref: second.ref })).toBe('running');
      expect(await f.runtime.status({ sandboxId: id, generation: 1, ref: first.ref })).toBe('stopped');
      expect(await f.runningFor(id)).toBe(1);
      await destroyFully(id, 2, second.state, second.ref);
    });

    it('stops a generation only: a stale stop leaves the newer one running', async () => {
      const id = randomUUID().replaceAll('-', '');
      const first = await f.runtime.start(request(id, 1));
      await f.runtime.stop({ sandboxId: id, generation: 1, ref: first.ref });
      const second = await f.runtime.start(request(id, 2, first.state));
      await f.runtime.stop({ sandboxId: id, generation: 1, ref: first.ref });
      expect(await f.runtime.status({ sandboxId: id, generation: 2, ref: second.ref })).toBe('running');
      await destroyFully(id, 2, second.state, second.ref);
    });

    it('deletes (destroy): stops it and removes what it made; again is harmless', async () => {
      const id = randomUUID().replaceAll('-', '');
      const started = await f.runtime.start(request(id, 1));
      const out = await destroyFully(id, 1, started.state, started.ref);
      expect(out).toEqual({ done: true, state: {} });
      expect(await f.runtime.status({ sandboxId: id, generation: 1, ref: started.ref })).toBe('stopped');
      expect(await f.runningFor(id)).toBe(0);
      expect(await destroyFully(id, 1, {}, undefined)).toEqual({ done: true, state: {} });
    });

    it('treats an unknown id as stopped, and stopping or destroying it as a no-op', async () => {
      const id = randomUUID().replaceAll('-', '');
      expect(await f.runtime.status({ sandboxId: id, generation: 1 })).toBe('stopped');
      await f.runtime.stop({ sandboxId: id, generation: 1 });
      expect(await f.runtime.destroy({ sandboxId: id, generation: 1, state: {} })).toEqual({ done: true, state: {} });
      expect((await f.runtime.list()).some((i) => i.sandboxId === id)).toBe(false);
    });

    it('reports a start the platform refuses as SandboxStartError with a readable detail', async () => {
      const id = randomUUID().replaceAll('-', '');
      const error = await f.runtime.start(request(id, 1, undefined, f.badSpec)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SandboxStartError);
      expect((error as SandboxStartError).detail.length).toBeGreaterThan(10);
      expect(await f.runningFor(id)).toBe(0);
      await destroyFully(id, 1, (error as SandboxStartError).state);
    });
  });
}
