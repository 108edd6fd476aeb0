import type { Logger } from '../lib/logger';

export type CloseStep = () => Promise<unknown> | unknown;

// A shutdown step that has not finished in this long is logged and left behind: a stop never
// hangs on one stuck part (the call log's records are in the spool, replayed at the next start).
const SHUTDOWN_STEP_MS = 15_000;

/** What a gateway closes when it stops: the last thing opened is closed first. */
export class Closer {
  readonly #steps: CloseStep[] = [];

  add(step: CloseStep): void {
    this.#steps.unshift(step);
  }

  async run(logger: Logger): Promise<void> {
    for (const [index, step] of this.#steps.entries()) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), SHUTDOWN_STEP_MS);
      });
      try {
        const outcome = await Promise.race([Promise.resolve().then(step), late]);
        if (outcome === 'late')
          logger.warn('shutdown step did not finish in time; going on', {
            step: index,
            code: String(step).slice(0, 120),
          });
      } catch (error) {
        logger.warn('shutdown step failed', { error });
      } finally {
        clearTimeout(timer);
      }
    }
    // Log lines held back by an asynchronous destination are written before close resolves.
    logger.flush();
  }
}
