import { describe, expect, it } from 'vitest';
import { ReportQueue } from '#sandbox/report-queue.ts';

type Fields = { start_task_status?: string; execution_status?: string };

/** A send that records what it carried and answers when the test says so. */
function recorder() {
  const sent: Fields[] = [];
  const answers: (() => void)[] = [];
  let inFlight = 0;
  let most = 0;
  const send = (f: Fields) =>
    new Promise<void>((resolve) => {
      sent.push(f);
      most = Math.max(most, ++inFlight);
      answers.push(() => {
        inFlight--;
        resolve();
      });
    });
  const answerNext = async () => {
    await new Promise((r) => setImmediate(r));
    answers.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { sent, send, answerNext, most: () => most };
}

describe("ReportQueue (a sandbox conversation's status reports)", () => {
  it('sends one at a time, in order, and folds the reports made meanwhile into the next request, later fields winning', async () => {
    const r = recorder();
    const q = new ReportQueue<Fields>(r.send);
    const first = q.push({ start_task_status: 'PREPARING_REPOSITORY' });
    await new Promise((resolve) => setImmediate(resolve)); // on its way
    void q.push({ start_task_status: 'RUNNING_SETUP_SCRIPT' });
    void q.push({ start_task_status: 'STARTING_CONVERSATION' });
    const last = q.push({ start_task_status: 'READY', execution_status: 'running' });
    await r.answerNext();
    await first;
    expect(r.sent).toEqual([
      { start_task_status: 'PREPARING_REPOSITORY' },
      { start_task_status: 'READY', execution_status: 'running' },
    ]);
    const after = q.push({ execution_status: 'finished' });
    await r.answerNext();
    await last;
    await r.answerNext();
    await after;
    await q.settled();
    expect(r.sent.at(-1)).toEqual({ execution_status: 'finished' });
    expect(r.sent).toHaveLength(3);
    expect(r.most()).toBe(1);
  });

  it('folds reports made in the same tick into one request', async () => {
    const r = recorder();
    const q = new ReportQueue<Fields>(r.send);
    void q.push({ start_task_status: 'STARTING_CONVERSATION' });
    const p = q.push({ start_task_status: 'READY' });
    await r.answerNext();
    await p;
    expect(r.sent).toEqual([{ start_task_status: 'READY' }]);
  });

  it('sends a lone report at once', async () => {
    const r = recorder();
    const q = new ReportQueue<Fields>(r.send);
    const p = q.push({ execution_status: 'paused' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.sent).toEqual([{ execution_status: 'paused' }]);
    await r.answerNext();
    await p;
  });
});
