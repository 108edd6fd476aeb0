import { describe, expect, it } from 'vitest';
import { CallLogWriter } from '../src/call-log/writer';
import { randomBase62 } from '../src/lib/ids';
import { silentLogger } from '../src/lib/logger';
import { callAt, useTestStore } from './harness';

const db = useTestStore();

async function account(): Promise<string> {
  const id = `acct_${randomBase62(12)}`;
  await db.store.db.sql`insert into accounts (id, name, plan_id) values (${id}, 'Insert test', 'team')`;
  return id;
}

const stored = (id: string) =>
  db.store.db.sql`
    select app, environment, client, model, error_type, upstream_message_id, usage, latency_ms, ttfb_ms,
           input_tokens, output_tokens, cache_creation_5m_tokens, cache_read_input_tokens, stream, partial,
           agent_id, request_bytes::int as request_bytes, created_at
    from calls where id = ${id}`.then((rows) => rows[0]);

const rollup = (acct: string) =>
  db.store.db.sql`
    select sum(requests)::int as requests, sum(errors)::int as errors, sum(input_tokens)::int as input,
           sum(output_tokens)::int as output
    from usage_hourly where account_id = ${acct}`.then((rows) => rows[0]);

describe('the call log insert (COPY, with a path for replays)', () => {
  it('stores every awkward value exactly: tabs, newlines, backslashes, quotes, non-Latin text, nulls, nested JSON', async () => {
    const acct = await account();
    const awkward = 'tab\there\nnewline\r\\back\\slash "quoted" \\N \u00e9\u4e2d\u{1F600}';
    const call = callAt(acct, '2026-11-25T10:15:00.123Z', {
      app: awkward,
      environment: '\\',
      client: 'claude_code',
      model: 'claude-opus-5-5',
      errorType: null,
      upstreamMessageId: 'msg_\t01',
      latencyMs: 12.5,
      ttfbMs: null,
      stream: true,
      partial: true,
      agentId: 'agent\n1',
      requestBytes: 1_048_576,
      usage: {
        input_tokens: 1200,
        output_tokens: 345,
        cache_creation: { ephemeral_5m_input_tokens: 70, ephemeral_1h_input_tokens: 0 },
        cache_creation_input_tokens: 70,
        cache_read_input_tokens: 9,
        service_tier: 'standard',
        note: awkward,
      } as never,
    });
    await db.store.calls.insertBatch([call]);
    expect(await stored(call.id)).toEqual({
      app: awkward,
      environment: '\\',
      client: 'claude_code',
      model: 'claude-opus-5-5',
      error_type: null,
      upstream_message_id: 'msg_\t01',
      usage: call.usage,
      latency_ms: 12.5,
      ttfb_ms: null,
      input_tokens: 1200,
      output_tokens: 345,
      cache_creation_5m_tokens: 70,
      cache_read_input_tokens: 9,
      stream: true,
      partial: true,
      agent_id: 'agent\n1',
      request_bytes: 1_048_576,
      created_at: new Date('2026-11-25T10:15:00.123Z'),
    });
    expect(await rollup(acct)).toEqual({ requests: 1, errors: 0, input: 1200, output: 345 });
  });

  it('a batch replayed in part (a lost commit acknowledgement) stores and counts only the calls it did not have', async () => {
    const acct = await account();
    const at = '2026-11-25T11:00:00Z';
    const [a, b, c] = [1, 2, 3].map((n) =>
      callAt(acct, at, { usage: { input_tokens: n, output_tokens: 10 * n } }),
    );
    await db.store.calls.insertBatch([a!]);
    await db.store.calls.insertBatch([a!, b!, c!]);
    await db.store.calls.insertBatch([c!, b!]);
    const [row] = await db.store.db.sql`select count(*)::int as n from calls where account_id = ${acct}`;
    expect(row?.n).toBe(3);
    expect(await rollup(acct)).toEqual({ requests: 3, errors: 0, input: 6, output: 60 });
  });

  it('a batch larger than one COPY message arrives whole, and a replay met in a later message still counts once', async () => {
    const acct = await account();
    const at = '2026-11-25T13:00:00Z';
    // 300 calls: several of the insert's COPY data messages (64 lines each), the last one short.
    const calls = Array.from({ length: 300 }, (_, i) =>
      callAt(acct, at, { app: `app\t${i}`, usage: { input_tokens: i, output_tokens: 1 } }),
    );
    await db.store.calls.insertBatch(calls.slice(0, 250));
    // Calls 200-249 are stored already: the COPY fails in its fourth message and the batch goes
    // again through the insert that skips them.
    await db.store.calls.insertBatch(calls.slice(200));
    const rows = await db.store.db.sql<{ app: string; input_tokens: number }[]>`
      select app, input_tokens from calls where account_id = ${acct} order by input_tokens`;
    expect(rows).toEqual(calls.map((_, i) => ({ app: `app\t${i}`, input_tokens: i })));
    expect(await rollup(acct)).toEqual({ requests: 300, errors: 0, input: (299 * 300) / 2, output: 300 });
  });

  it('a record PostgreSQL cannot store is set aside alone by the writer; the rest of its batch is stored', async () => {
    const acct = await account();
    const at = '2026-11-25T12:00:00Z';
    const good = [1, 2, 3, 4].map(() => callAt(acct, at, { usage: { input_tokens: 5, output_tokens: 1 } }));
    // A NUL character is no text PostgreSQL keeps: a data error (SQLSTATE class 22), never an outage.
    const bad = callAt(acct, at, {
      app: 'nul\u0000here',
      usage: { input_tokens: 1000, output_tokens: 1000 },
    });
    const writer = new CallLogWriter(db.store.calls, { flushIntervalMs: 3_600_000, logger: silentLogger });
    for (const r of [good[0]!, good[1]!, bad, good[2]!, good[3]!]) writer.enqueue(r);
    await writer.flush();
    expect(writer.status()).toMatchObject({ written: 4, rejected: 1, queued: 0, databaseErrors: 0 });
    expect(await rollup(acct)).toEqual({ requests: 4, errors: 0, input: 20, output: 4 });
    await writer.close();
  });
});
