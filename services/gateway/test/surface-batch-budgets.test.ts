import Anthropic from '@anthropic-ai/sdk';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';
import { failure } from './surface-kit';

/**
 * Issue 18: budgets and spend caps hold a message batch's ceiling at its creation and give it
 * back once its results are recorded (charged at their real cost, at the batch price).
 *
 * Prices by hand: Claude Haiku 4.5 is $1 per million input tokens, $2 per million for a 1-hour
 * cache write (the dearest input rate, which a ceiling takes), $5 per million output tokens;
 * the batch price is 50% of input and output
 * (https://docs.claude.com/en/docs/about-claude/pricing, read 2026-11-25). A USD per million
 * tokens is a micro-USD per token.
 */
const MAX_TOKENS = 10_000;
const CAP_CENTS = 25;
/** The gateway's ceiling rule: every body byte a token, plus 1,000 tokens for the tools' system prompt. */
const PROMPT_TOKENS = 1_000;

const requests = (tag: string) =>
  Array.from({ length: 4 }, (_, i) => ({
    custom_id: `${tag}-${i}`,
    params: {
      model: 'claude-haiku-4-5',
      max_tokens: MAX_TOKENS,
      messages: [{ role: 'user' as const, content: `Summarise chapter ${i} of the ${tag} file.` }],
    },
  }));

/** A batch's ceiling in micro-USD, by hand: each request's input bytes and max_tokens, halved. */
function batchCeiling(tag: string): number {
  let micro = 0;
  for (const r of requests(tag)) {
    const bytes = Buffer.byteLength(JSON.stringify(r.params));
    micro += (bytes + PROMPT_TOKENS) * 2 + MAX_TOKENS * 5;
  }
  return Math.ceil(micro * 0.5);
}

const dollars = (micro: number, round: (n: number) => number) =>
  `$${(round(micro / 10_000) / 100).toFixed(2)}`;

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? null;

/** Where a backend keeps a key's spend counter and the holds on it (micro-USD). */
interface LedgerView {
  holds(keyId: string): Promise<{ holdId: string; micro: number }[]>;
  spent(keyId: string): Promise<number>;
  /** Redis: how long the key's holds are kept (the hash of holds expires as a whole). */
  holdsTtlMs?(keyId: string): Promise<number>;
  close?(): Promise<unknown>;
}

const postgresView = (stack: () => Stack): LedgerView => ({
  async holds(keyId) {
    const rows = await stack().gateway.store.db.sql<{ hold_id: string; micro_usd: string }[]>`
      select hold_id, micro_usd from spend_holds where scope = ${keyId}`;
    return rows.map((r) => ({ holdId: r.hold_id, micro: Number(r.micro_usd) }));
  },
  async spent(keyId) {
    const [row] = await stack().gateway.store.db.sql<{ micro_usd: string }[]>`
      select micro_usd from spend_counters where scope = ${keyId}`;
    return Number(row!.micro_usd);
  },
});

function redisView(url: string): LedgerView {
  const redis = new Redis(url);
  return {
    async holds(keyId) {
      const out: { holdId: string; micro: number }[] = [];
      for (const k of await redis.keys(`keygate:held:${keyId}:*`))
        for (const [holdId, v] of Object.entries(await redis.hgetall(k)))
          out.push({ holdId, micro: Number(v.split(':')[0]) });
      return out;
    },
    async spent(keyId) {
      const [k] = await redis.keys(`keygate:spend:${keyId}:*`);
      return Number(await redis.get(k!));
    },
    async holdsTtlMs(keyId) {
      const [k] = await redis.keys(`keygate:held:${keyId}:*`);
      return redis.pttl(k!);
    },
    close: () => redis.quit(),
  };
}

const BACKENDS = [
  { name: 'PostgreSQL', env: {} as Record<string, string>, view: postgresView },
  ...(TEST_REDIS_URL
    ? [{ name: 'Redis', env: { REDIS_URL: TEST_REDIS_URL }, view: () => redisView(TEST_REDIS_URL) }]
    : []),
];

describe.each(BACKENDS)('a message batch under a hard spend cap (counters in $name)', ({ env, view }) => {
  let stack: Stack;
  const ledger = view(() => stack);
  let acct: SeededAccount;
  let key: { id: string; key: string };
  let client: Anthropic;
  beforeAll(async () => {
    stack = await startStack(env);
    acct = await stack.seedAccount();
    key = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', {
        key: acct.adminKey,
        body: { limits: { monthly_spend_cap_cents: CAP_CENTS } },
      })
    ).body;
    client = new Anthropic({ baseURL: stack.gateway.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await ledger.close?.();
    await stack?.close();
  });

  it('a cap that fits two batches admits exactly two of three at once; the third gets the answer a single call over the cap gets; once recorded, the holds give way to the real cost', async () => {
    const sql = stack.gateway.store.db.sql;
    const tags = ['north', 'south', 'coast'];
    const ceilings = tags.map(batchCeiling);
    // All three have the same size (the tags have the same length): two fit, three do not.
    expect(new Set(ceilings).size).toBe(1);
    const ceiling = ceilings[0]!;
    expect(2 * ceiling).toBeLessThanOrEqual(CAP_CENTS * 10_000);
    expect(3 * ceiling).toBeGreaterThan(CAP_CENTS * 10_000);

    const settled = await Promise.allSettled(
      tags.map((tag) => client.messages.batches.create({ requests: requests(tag) })),
    );
    const created = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    expect(created).toHaveLength(2);
    const refused = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult;
    const err = await failure(Promise.reject(refused.reason));
    const left = CAP_CENTS * 10_000 - 2 * ceiling;
    expect(err).toEqual({
      status: 429,
      type: 'billing_error',
      message: expect.stringContaining(
        `This call may cost up to ${dollars(ceiling, Math.ceil)} (4 requests' max_tokens and input at the batch price), more than the ${dollars(left, Math.floor)} left of this key's monthly spend cap of $0.25: `,
      ),
    });
    expect((refused.reason as { headers: Headers }).headers.get('x-should-retry')).toBe('false');
    // The provider never saw the refused batch.
    expect(stack.emulator.surface.batches.batches.size).toBe(2);

    // A single call over what is left gets the same answer, in its own words for its ceiling.
    const single = {
      model: 'claude-haiku-4-5',
      max_tokens: 20_000,
      // About 900 KB of prompt: what it is expected to cost is more than the whole cap.
      messages: [{ role: 'user', content: 'One more chapter. '.repeat(50_000) }],
    };
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': key.key,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify(single),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
    // A single call holds what it is expected to cost (the key's cap asks for no ceiling).
    expect(await res.json()).toEqual({
      type: 'error',
      error: {
        type: 'billing_error',
        message: expect.stringMatching(
          new RegExp(
            `^This call is expected to cost about \\$[\\d.]+ \\(about \\d+ uncached and 0 cached input tokens and \\d+ output tokens at claude-haiku-4-5's price\\), more than the \\$${dollars(left, Math.floor).slice(1)} left of this key's monthly spend cap of \\$0\\.25: `,
          ),
        ),
      },
      request_id: expect.any(String),
    });

    // Each created batch holds its ceiling on the key's counter, kept with the batch.
    const holds = await ledger.holds(key.id);
    expect(holds.map((h) => h.micro)).toEqual([ceiling, ceiling]);
    expect(holds.every((h) => h.holdId.startsWith('batch:'))).toBe(true);
    // A small call's short hold on the same counter does not shorten the batches' 25-hour ones.
    const small = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(small.type).toBe('message');
    if (ledger.holdsTtlMs) expect(await ledger.holdsTtlMs(key.id)).toBeGreaterThan(24 * 3_600_000);
    const rows = await sql`
      select id, reserved_cents, hold_id from batches where id in ${sql(created.map((b) => b.id))}`;
    expect(rows.map((r) => r.reserved_cents)).toEqual([ceiling / 10_000, ceiling / 10_000]);
    expect(new Set(rows.map((r) => r.hold_id))).toEqual(new Set(holds.map((h) => h.holdId)));

    // The follower records the results (the client never asks for them) and gives the holds back.
    await waitFor(
      async () => {
        const open = await sql`
          select 1 from batches where id in ${sql(created.map((b) => b.id))} and status <> 'recorded'`;
        return open.length === 0;
      },
      { timeout: 30_000, interval: 100, what: 'both batches to be recorded' },
    );
    expect(await ledger.holds(key.id)).toEqual([]);

    // What stays on the counter is what the results really cost, at the batch price.
    const entries = stack.emulator.ledger.entries.filter((e) => created.some((b) => b.id === e.batchId));
    expect(entries).toHaveLength(8);
    let real = 0;
    for (const e of entries) {
      const u = e.usage!;
      expect(u.cache_creation_input_tokens ?? 0).toBe(0);
      expect(u.cache_read_input_tokens ?? 0).toBe(0);
      real += Math.round((u.input_tokens * 1 + u.output_tokens * 5) * 0.5);
    }
    // The small call at full price: $1 and $5 per million input and output tokens.
    const smallCost = small.usage.input_tokens * 1 + small.usage.output_tokens * 5;
    expect(await ledger.spent(key.id)).toBe(real + smallCost);
    expect(real).toBeLessThan(ceiling / 10);

    // With the holds gone, the third batch fits.
    const third = await client.messages.batches.create({ requests: requests('coast') });
    expect(third.processing_status).toBe('in_progress');
  });
});
