import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardSession } from './dashboard-http';
import { api } from './harness';
import { waitFor } from './kit/wait';
import { startSurfaceStack, type SurfaceStack } from './surface-kit';

/**
 * Issue 18: a message batch's results are in the usage and cost reports and on the dashboard's
 * groups page, grouped by the batch id, at the batch price.
 *
 * Prices by hand: Claude Opus 4.5 is $5 per million input tokens and $25 per million output
 * tokens; the batch price is 50% of both (https://docs.claude.com/en/docs/about-claude/pricing,
 * read 2026-11-25). A USD per million tokens is a micro-USD per token; a cent is 10,000 micro-USD.
 */
const OUTPUT_TOKENS = 4_000;

describe('batch results in the reports', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  it('usage_report/messages, cost_report and the groups page show the batch by its id at half price', async () => {
    const batch = await s.alice.client.messages.batches.create(
      {
        requests: Array.from({ length: 3 }, (_, i) => ({
          custom_id: `chapter-${i}`,
          params: {
            model: 'claude-opus-4-5',
            max_tokens: OUTPUT_TOKENS,
            messages: [{ role: 'user' as const, content: `Summarise chapter ${i} of the annual report.` }],
          },
        })),
      },
      { headers: { 'x-emulator-output-tokens': String(OUTPUT_TOKENS) } },
    );
    const sql = s.stack.gateway.store.db.sql;
    await waitFor(
      async () => (await sql`select status from batches where id = ${batch.id}`)[0]?.status === 'recorded',
      { timeout: 30_000, interval: 100, what: 'the batch to be recorded' },
    );
    const entries = s.stack.emulator.ledger.entries.filter((e) => e.batchId === batch.id);
    expect(entries).toHaveLength(3);
    let input = 0;
    let output = 0;
    for (const e of entries) {
      input += e.usage!.input_tokens;
      output += e.usage!.output_tokens;
      expect(e.usage!.cache_read_input_tokens ?? 0).toBe(0);
      expect(e.usage!.cache_creation_input_tokens ?? 0).toBe(0);
    }
    expect(output).toBe(3 * OUTPUT_TOKENS);
    const cents = ((input * 5 + output * 25) * 0.5) / 10_000;
    // 3 × 4,000 × $25 / 2 per million is 15 cents, plus the input's few tenths of a cent.
    expect(cents).toBeGreaterThan(15);
    expect(cents).toBeLessThan(16);

    const day = new Date().toISOString().slice(0, 10);
    const next = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const range = `starting_at=${day}&ending_at=${next}`;
    const usage = await api(
      s.stack.gateway.url,
      `/v1/organizations/usage_report/messages?${range}&group_by[]=group_id&group_by[]=user_id`,
      { key: s.adminKey },
    );
    expect(usage.status).toBe(200);
    const rows = usage.body.data.flatMap((b: any) => b.results).filter((r: any) => r.group_id === batch.id);
    expect(rows).toEqual([
      expect.objectContaining({
        group_id: batch.id,
        user_id: s.alice.memberId,
        uncached_input_tokens: input,
        output_tokens: output,
        requests: 3,
        errors: 0,
      }),
    ]);

    const cost = await api(
      s.stack.gateway.url,
      `/v1/organizations/cost_report?${range}&group_by[]=group_id`,
      {
        key: s.adminKey,
      },
    );
    expect(cost.status).toBe(200);
    const items = cost.body.data.flatMap((b: any) => b.results).filter((r: any) => r.group_id === batch.id);
    expect(items.length).toBeGreaterThan(0);
    const reported = items.reduce((sum: number, i: any) => sum + Number(i.amount), 0);
    expect(reported).toBeCloseTo(cents, 9);

    // The dashboard's groups page: the batch's row, its member and its cost ($, four decimals).
    const dash = await dashboardSession(s.stack.gateway.url, s.adminKey);
    const page = await (await dash.get('/dashboard/groups?period=7d')).text();
    const row = page.split('<tr').find((r) => r.includes(batch.id));
    expect(row).toBeDefined();
    expect(row).toContain((cents / 100).toFixed(4));
    expect(row).toContain('alice@example.com');
  });
});
