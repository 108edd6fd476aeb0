import { databaseUnavailable } from '../lib/database-unavailable';

/**
 * Whether the database answers, as a cache's reads find it. While reads fail for want of a
 * database (`failed`), the cache answers from what it holds and asks again at most every
 * `retryMs` (`retryDue`); the first read that succeeds (`answered`) ends the outage.
 *
 * Reads overlap, so a read's outcome changes the state only when the read began after the last
 * change (`epoch` taken when it began): a read begun before the database came back that fails
 * late, or one begun before the outage that succeeds late, says nothing about now. Without that,
 * one outage logged as two.
 */
export class DatabaseWatch {
  #retryAt: number | null = null;
  #epoch = 0;
  readonly #clock: () => number;
  readonly #retryMs: number;
  readonly #onChange: (state: 'down' | 'up', error?: unknown) => void;

  constructor(opts: {
    clock: () => number;
    retryMs: number;
    onChange?: (state: 'down' | 'up', error?: unknown) => void;
  }) {
    this.#clock = opts.clock;
    this.#retryMs = opts.retryMs;
    this.#onChange = opts.onChange ?? (() => {});
  }

  get down(): boolean {
    return this.#retryAt !== null;
  }

  /** Taken when a read begins, given back with its outcome. */
  get epoch(): number {
    return this.#epoch;
  }

  /** While down: true at most once per `retryMs`, for the one read that asks whether it is back. */
  retryDue(): boolean {
    if (this.#retryAt === null) return true;
    const now = this.#clock();
    if (now < this.#retryAt) return false;
    this.#retryAt = now + this.#retryMs;
    return true;
  }

  /** A read failed: true when for want of a database (the watch is down from then on). */
  failed(error: unknown, epoch = this.#epoch): boolean {
    if (!databaseUnavailable(error)) return false;
    if (this.#retryAt === null && epoch === this.#epoch) {
      this.#retryAt = this.#clock() + this.#retryMs;
      this.#epoch++;
      this.#onChange('down', error);
    }
    return true;
  }

  /** A read succeeded: true when the database was down until now. */
  answered(epoch = this.#epoch): boolean {
    if (this.#retryAt === null || epoch !== this.#epoch) return false;
    this.#retryAt = null;
    this.#epoch++;
    this.#onChange('up');
    return true;
  }
}
