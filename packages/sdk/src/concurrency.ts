/**
 * Maps `items` through `fn` with at most `limit` calls in flight, results in input order. On
 * the first failure no new call starts, the others are told through their signal, and that
 * failure is thrown once every call has settled.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number, signal: AbortSignal) => Promise<R>,
  parent?: AbortSignal,
): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && !controller.signal.aborted && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index, controller.signal);
      } catch (error) {
        if (failure === null) {
          failure = { error };
          controller.abort(error);
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  } finally {
    parent?.removeEventListener('abort', onAbort);
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
  if (controller.signal.aborted) throw controller.signal.reason;
  return results;
}
