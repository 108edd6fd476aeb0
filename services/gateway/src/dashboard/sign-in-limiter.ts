/**
 * Failed sign-ins counted per client address and per credential (a key's prefix, or the
 * operator token) over a fixed window. An address past its limit is refused until the window
 * ends, right or wrong; a credential past its limit refuses only wrong guesses, so someone
 * else's guesses never lock its owner out.
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

  /** Seconds this address must wait before it may try at all, or 0. */
  addressWait(address: string): number {
    return this.#wait(`a:${address}`, this.opts.maxPerAddress);
  }

  /** Seconds before a wrong guess at this credential is answered as one again (not with 429), or 0. */
  credentialWait(prefix: string): number {
    return this.#wait(`p:${prefix}`, this.opts.maxPerPrefix);
  }

  #wait(id: string, max: number): number {
    const now = this.opts.clock();
    const s = this.#seen.get(id);
    return s && s.resetAt > now && s.failures >= max ? Math.ceil((s.resetAt - now) / 1000) : 0;
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
