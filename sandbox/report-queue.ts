/**
 * Status reports of one conversation, sent one at a time in the order they were made, without
 * holding up whoever makes them. Reports made while one is on its way go together in the next
 * request, later fields over earlier ones: the control plane moves a start task forward over
 * skipped steps, so the last status it receives is the last one made, in fewer round trips.
 */
export class ReportQueue<F extends object> {
  private last: Promise<void> = Promise.resolve();
  private waiting: F | undefined;

  /** @param send delivers one report; it must not reject (a failed report is logged by the caller). */
  constructor(private readonly send: (fields: F) => Promise<void>) {}

  /** Queues `fields`; resolves once the request that carries them is answered. */
  push(fields: F): Promise<void> {
    if (this.waiting) {
      Object.assign(this.waiting, fields);
      return this.last;
    }
    const waiting = { ...fields };
    this.waiting = waiting;
    this.last = this.last.then(() => {
      this.waiting = undefined;
      return this.send(waiting);
    });
    return this.last;
  }

  /** Resolves when every report queued so far has been answered. */
  settled(): Promise<void> {
    return this.last;
  }
}
