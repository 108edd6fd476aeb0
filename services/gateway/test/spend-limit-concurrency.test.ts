import { describe, expect, it } from 'vitest';
import type { UsageRow } from '../src/call-log/usage-queries';
import { api, PROVIDER_KEY, TEST_DATABASE_URL } from './harness';
import { cappedCall as call, useCluster } from './instances';
import { handCents } from './kit/published-rates';
import { waitFor } from './kit/wait';

/**
 * Issue 19 item 4: a spend limit in the provider's shape holds under 240 concurrent calls on
 * three gateway processes (the compiled build behind HAProxy). The limit is a group's
 * per-member limit, resolved for the member, and the member calls through two keys: the
 * spend counted is the member's, across keys and instances. Each call holds its ceiling at
 * admission (the budgets engine's reservation), so the written bound is: the admitted calls
 * spend at most the limit, 0 cents over.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? null;
const CONCURRENCY = 240;
const LIMIT_CENTS = 5;

for (const shared of ['redis', 'postgresql'] as const) {
  describe.runIf(TEST_DATABASE_URL && (shared === 'postgresql' || REDIS_URL))(
    `a spend limit under 240 concurrent calls on three instances, counters in ${shared}`,
    () => {
      const ctx = useCluster({
        databaseUrl: TEST_DATABASE_URL!,
        redisUrl: shared === 'redis' ? REDIS_URL : null,
        providerKey: PROVIDER_KEY,
        timeoutMs: 180_000,
      });

      it(`a group's ${LIMIT_CENTS}-cent monthly limit per member: spend never passes it, the rest get 429 billing_error`, async () => {
        const admin = (path: string, body?: unknown) =>
          api(ctx.cluster.url, `/v1/organizations${path}`, { key: ctx.seeded.adminKey, body });
        const member = (await admin('/users', { email: 'burst@ctx.cluster.test' })).body;
        // Keys without the plan's default rate limits: only the spend limit is under test.
        const keys = [
          (await ctx.seeded.newKey({ memberId: member.id, name: 'laptop' })).secret,
          (await ctx.seeded.newKey({ memberId: member.id, name: 'ci' })).secret,
        ];
        const group = (await admin('/rbac_groups', { name: 'Burst' })).body;
        await admin(`/rbac_groups/${group.id}/members`, { user_id: member.id });
        const limit = await admin('/spend_limits', {
          scope: { type: 'rbac_group', rbac_group_id: group.id },
          amount: String(LIMIT_CENTS),
          period: 'monthly',
        });
        expect(limit.status).toBe(200);

        const answers: Awaited<ReturnType<typeof call>>[] = [];
        for (let wave = 0; wave < 10; wave++) {
          const got = await Promise.all(
            Array.from({ length: CONCURRENCY }, (_, i) => call(ctx.cluster.url, keys[i % 2]!)),
          );
          answers.push(...got);
          if (!got.some((a) => a.status === 200)) break;
        }
        const admitted = answers.filter((a) => a.status === 200);
        const refused = answers.filter((a) => a.status !== 200);
        expect(admitted.length).toBeGreaterThan(0);
        expect(refused.length).toBeGreaterThan(0);
        expect(new Set(refused.map((a) => `${a.status} ${a.error} ${a.retry}`))).toEqual(
          new Set(['429 billing_error false']),
        );
        expect(new Set(answers.map((a) => a.instance)).size).toBe(3);

        const rows = await waitFor(
          async () => {
            const r = await ctx.seeded.store.db.sql<UsageRow[]>`
              select model, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_5m_tokens,
                     cache_creation_1h_tokens, web_search_requests
              from calls where member_id = ${member.id} and status = 200`;
            return r.length >= admitted.length ? r : null;
          },
          { timeout: 20_000, what: 'the admitted calls in the call log' },
        );
        expect(rows.length).toBe(admitted.length);
        expect(rows.every((r) => r.cache_read_input_tokens === 0 && r.cache_creation_5m_tokens === 0)).toBe(
          true,
        );
        const spent = rows.reduce((sum, r) => sum + handCents(r.model, r), 0);
        console.info(
          `spend limit (${shared}): ${answers.length} calls, ${admitted.length} admitted, ${spent.toFixed(4)} of ${LIMIT_CENTS} cents spent, over the limit by ${Math.max(0, spent - LIMIT_CENTS).toFixed(4)} (bound 0)`,
        );
        expect(spent).toBeLessThanOrEqual(LIMIT_CENTS);
        // The effective report shows the group's limit as the member's, from the group.
        const effective = await api(
          ctx.cluster.url,
          `/v1/organizations/spend_limits/effective?user_ids[]=${member.id}`,
          {
            key: ctx.seeded.adminKey,
          },
        );
        expect(effective.body.data).toEqual([
          expect.objectContaining({
            amount: String(LIMIT_CENTS),
            period: 'monthly',
            source: { type: 'rbac_group', rbac_group_id: group.id },
            spend_limit_id: limit.body.id,
          }),
        ]);
      }, 180_000);
    },
  );
}
