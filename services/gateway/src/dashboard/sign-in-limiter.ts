/**
 * Failed sign-ins counted per client address and per key prefix over a fixed window; past
 * the limit, further attempts are refused until the window ends, right or wrong.
 */
export class SignInLimiter {
  readonly #seen = new Map<string, { failures: number; resetAt: number }>();

  constructor(
    private readonly opts: {
      maxPerAddress: number;
      maxPerPrefix: number;
      windowMs: number;
      clock: () => number;
    },
  ) {}

  /** Seconds to wait, or 0 when this address and prefix may try now. */
  retryAfter(address: string, prefix: string): number {
    const now = this.opts.clock();
    const wait = (id: string, max: number) => {
      const s = this.#seen.get(id);
      return s && s.resetAt > now && s.failures >= max ? Math.ceil((s.resetAt - now) / 1000) : 0;
    };
    return Math.max(
      wait(`a:${address}`, this.opts.maxPerAddress),
      wait(`p:${prefix}`, this.opts.maxPerPrefix),
    );
  }

  fail(address: string, prefix: string): void {
    const now = this.opts.clock();
    for (const id of [`a:${address}`, `p:${prefix}`]) {
      const s = this.#seen.get(id);
      if (s && s.resetAt > now) s.failures++;
      else this.#seen.set(id, { failures: 1, resetAt: now + this.opts.windowMs });
    }
    if (this.#seen.size > 50_000)
      for (const [id, s] of this.#seen) if (s.resetAt <= now) this.#seen.delete(id);
  }
}

/** What a guess shares with the key it targets: the kind and the first characters of the random part. */
export function keyPrefix(token: string): string {
  return token.startsWith('kg_') ? token.slice(0, token.indexOf('_', 3) + 9) : 'operator';
}
