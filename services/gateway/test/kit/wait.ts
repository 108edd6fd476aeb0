/** What a condition answers once it holds. */
export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

export interface WaitOptions {
  /** Give up after this long (ms). */
  timeout: number;
  /** Between two looks (ms). */
  interval?: number;
  /** What was awaited, for the error when it never came. */
  what?: string;
}

/**
 * Resolves with the condition's first truthy answer, looking every `interval` ms: the one way
 * tests wait for a row, a state or a log line, bounded instead of a fixed sleep. A condition
 * that throws counts as not yet (a server still starting refuses connections).
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeout, interval = 25, what = 'the condition' }: WaitOptions,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline)
      throw new Error(`waited ${timeout} ms for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}
