import { describe, expect, it } from 'vitest';
import type { UsageRow } from '../src/call-log/usage-queries';
import { PROVIDER_KEY, TEST_DATABASE_URL } from './harness';
import { handCents } from './kit/published-rates';
import {
  CAPPED_BODY as BODY,
  CAPPED_MAX_TOKENS as MAX_TOKENS,
  type CappedAnswer as Answer,
  cappedCall as call,
  type Seeded,
  useCluster,
} from './instances';

/**
 * Issue 16 item 5: a hard spend cap and a tokens-per-minute limit hold under 240 concurrent
 * calls spread over three gateway processes (the compiled build, behind HAProxy): each call
 * holds its ceiling at admission, atomically across the instances, so what the admitted calls
 * spend never passes the limit. Once with the counters in Redis, once with PostgreSQL alone
 * (spend caps only: without Redis, rate limits are counted per instance).
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? null;
const CONCURRENCY = 240;

/** Waves of CONCURRENCY calls at once until a wave admits none (the limit is reached). */
async function waves(url: string, key: string, max = 10): Promise<Answer[]> {
  const all: Answer[] = [];
  for (let wave = 0; wave < max; wave++) {
    const answers = await Promise.all(Array.from({ length: CONCURRENCY }, () => call(url, key)));
    all.push(...answers);
    if (!answers.some((a) => a.status === 200)) break;
  }
  return all;
}

/** Waits until the call log holds `count` answered calls of the key; answers their spend in cents and their tokens. */
async function spentBy(seeded: Seeded, keyId: string, count: number) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const rows = await seeded.store.db.sql<UsageRow[]>`
      select model, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_5m_tokens,
             cache_creation_1h_tokens, web_search_requests
      from calls where key_id = ${keyId} and status = 200`;
    if (rows.length >= count || Date.now() > deadline)
      return {
        rows: rows.length,
        cents: rows.reduce((sum, r) => sum + handCents(r.model, r), 0),
        tokens: rows.reduce(
          (sum, r) => sum + r.input_tokens + r.output_tokens + r.cache_creation_5m_tokens,
          0,
        ),
      };
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const shared of ['redis', 'postgresql'] as const) {
  describe.runIf(TEST_DATABASE_URL && (shared === 'postgresql' || REDIS_URL))(
    `240 concurrent calls on three instances, counters in ${shared}`,
    () => {
      const ctx = useCluster({
        databaseUrl: TEST_DATABASE_URL!,
        redisUrl: shared === 'redis' ? REDIS_URL : null,
        providerKey: PROVIDER_KEY,
      });

      it('a 5-cent monthly spend cap: the admitted calls spend at most 5 cents, the rest get 429', async () => {
        const capCents = 5;
        const key = await ctx.seeded.newKey({ limitMonthlySpendCents: capCents });
        const answers = await waves(ctx.cluster.url, key.secret);
        const admitted = answers.filter((a) => a.status === 200);
        const refused = answers.filter((a) => a.status !== 200);
        expect(admitted.length).toBeGreaterThan(0);
        expect(new Set(refused.map((a) => `${a.status} ${a.error}`))).toEqual(new Set(['429 billing_error']));
        // Every instance answered some of them: the holds were shared.
        expect(new Set(answers.map((a) => a.instance)).size).toBe(3);
        const spent = await spentBy(ctx.seeded, key.id, admitted.length);
        expect(spent.rows).toBe(admitted.length);
        const overshoot = spent.cents - capCents;
        console.info(
          `spend cap (${shared}): ${answers.length} calls, ${admitted.length} admitted, ${spent.cents.toFixed(4)} of ${capCents} cents spent, worst overshoot ${Math.max(0, overshoot).toFixed(4)} cents`,
        );
        expect(overshoot).toBeLessThanOrEqual(0);
      }, 120_000);

      // Without Redis, rate limits are counted by each instance (no database round trip per call).
      if (shared === 'redis')
        it('a tokens-per-minute limit: the calls admitted together use at most the limit', async () => {
          // Room for three calls' ceilings (body, tools' prompt allowance and max_tokens), not four.
          const ceiling = BODY.length + 1_000 + MAX_TOKENS;
          const tpm = ceiling * 3 + 100;
          const key = await ctx.seeded.newKey({ limitTpm: tpm });
          const started = Date.now();
          const answers = await Promise.all(
            Array.from({ length: CONCURRENCY }, () => call(ctx.cluster.url, key.secret)),
          );
          const elapsedMin = (Date.now() - started) / 60_000;
          const admitted = answers.filter((a) => a.status === 200);
          expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 429)).toBe(true);
          const used = await spentBy(ctx.seeded, key.id, admitted.length);
          // The bucket refills while the wave runs: at most the limit plus that refill.
          const allowed = tpm + tpm * elapsedMin;
          console.info(
            `tokens per minute (${shared}): ${admitted.length} of ${answers.length} admitted, ${used.tokens} tokens used of ${Math.floor(allowed)} allowed`,
          );
          expect(admitted.length).toBeGreaterThanOrEqual(1);
          expect(used.tokens).toBeLessThanOrEqual(allowed);
        }, 120_000);
    },
  );
}
