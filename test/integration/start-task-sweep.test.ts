import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStartTaskStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { StartTaskRecord } from '#shared/conversations/model.ts';
import { START_WRITE_SECONDS } from '#shared/conversations/sweep.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

const task = (
  id: string,
  status: StartTaskRecord['status'],
  sandboxId: string | null,
  updatedAt: string,
): StartTaskRecord => ({
  id,
  userId: 'dev',
  status,
  detail: null,
  app_conversation_id: id.padEnd(32, '0'),
  sandbox_id: sandboxId,
  request: { pr_number: [], agent_type: 'default' },
  createdAt: updatedAt,
  updatedAt,
});

describe('the start-task sweep', () => {
  it('fails a task whose sandbox failed (with its reason) and one that stopped moving; leaves fresh and finished ones alone', async () => {
    const store = new DynamoStartTaskStore();
    const now = new Date();
    const fresh = now.toISOString();
    const old = new Date(now.getTime() - 10 * 60_000).toISOString();
    // A sandbox that failed: start one, then kill its process behind the service's back.
    const started = await stack.call('POST', '/api/v1/sandboxes');
    expect(started.status).toBe(200);
    const sandboxId = started.body.id as string;
    await store.create(task('a1', 'WAITING_FOR_SANDBOX', sandboxId, fresh));
    await store.create(task('a2', 'PREPARING_REPOSITORY', null, old));
    await store.create(task('a3', 'RUNNING_SETUP_SCRIPT', null, fresh));
    await store.create(task('a4', 'WAITING_FOR_SANDBOX', 'nosuchsandbox', fresh));
    await stack.call('DELETE', `/api/v1/sandboxes/${sandboxId}`);

    // A start names its sandbox before it writes the sandbox's record: a task whose sandbox has no
    // record (a1 deleted, a4 never written) fails only once no start request can still be writing it.
    expect(await stack.services.conversationHousekeeping.sweepStartTasks(new Date(now.getTime() + 1000), 300)).toBe(1);
    expect((await store.getMany(['a1', 'a4'])).get('a1')!.status).toBe('WAITING_FOR_SANDBOX');
    const failed = await stack.services.conversationHousekeeping.sweepStartTasks(
      new Date(now.getTime() + (START_WRITE_SECONDS + 1) * 1000),
      300,
    );
    expect(failed).toBe(2);
    const after = await store.getMany(['a1', 'a2', 'a3', 'a4']);
    expect(after.get('a1')).toMatchObject({
      status: 'ERROR',
      detail: expect.stringContaining(`The sandbox ${sandboxId} failed`),
    });
    expect(after.get('a2')).toMatchObject({
      status: 'ERROR',
      detail: expect.stringContaining('stopped moving at PREPARING_REPOSITORY for more than 300 s'),
    });
    expect(after.get('a3')!.status).toBe('RUNNING_SETUP_SCRIPT');
    expect(after.get('a4')!.status).toBe('ERROR');
    // Idempotent: a second sweep changes nothing, and finished tasks leave the pending index.
    expect(
      await stack.services.conversationHousekeeping.sweepStartTasks(
        new Date(now.getTime() + (START_WRITE_SECONDS + 2) * 1000),
        300,
      ),
    ).toBe(0);
  });
});
