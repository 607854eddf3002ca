/**
 * Keeps the first and last half of a stream's text and counts what falls between, so a command that
 * prints gigabytes costs a bounded amount of memory.
 */
export class BoundedText {
  #head = '';
  #tail = '';
  #dropped = 0;
  readonly #half: number;

  constructor(max: number) {
    this.#half = Math.max(1, Math.floor(max / 2));
  }

  push(chunk: string): void {
    if (this.#head.length < this.#half) {
      const room = this.#half - this.#head.length;
      this.#head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (!chunk) return;
    this.#tail += chunk;
    if (this.#tail.length > this.#half) {
      this.#dropped += this.#tail.length - this.#half;
      this.#tail = this.#tail.slice(-this.#half);
    }
  }

  get truncated(): boolean {
    return this.#dropped > 0;
  }

  toString(): string {
    if (!this.#dropped) return this.#head + this.#tail;
    return `${this.#head}\n[... output truncated: ${this.#dropped} characters omitted ...]\n${this.#tail}`;
  }
}
