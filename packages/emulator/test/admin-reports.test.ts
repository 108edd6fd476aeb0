import { describe, expect, it } from 'vitest';
import { apiKeyId, DEFAULT_ADMIN_KEY, listPriceCents } from '../src/index';
import { KEY, useEmulator } from './helpers';

const ctx = useEmulator();

const admin = (path: string, key = DEFAULT_ADMIN_KEY) =>
  fetch(`${ctx.emulator.url}/v1/organizations/${path}`, { headers: { 'x-api-key': key } });

describe('the Admin API usage and cost reports, from the ledger', () => {
  it('report per day and model what was served and what it bills at the list prices', async () => {
    for (const model of ['claude-opus-5-5', 'claude-opus-5-5', 'claude-sonnet-4-6']) {
      const msg = await ctx.client.messages.create({
        model,
        max_tokens: 32,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(msg.type).toBe('message');
    }
    const day = new Date().toISOString().slice(0, 10);
    const q = `starting_at=${day}T00:00:00Z&group_by[]=model&group_by[]=api_key_id`;
    const usage = (await (await admin(`usage_report/messages?${q}`)).json()) as any;
    const served = ctx.emulator.ledger.entries.filter((e) => e.endpoint === 'messages');
    const opus = usage.data[0].results.find((r: { model: string }) => r.model === 'claude-opus-5-5');
    expect(opus).toMatchObject({
      api_key_id: apiKeyId(KEY),
      uncached_input_tokens: served
        .filter((e) => e.model === 'claude-opus-5-5')
        .reduce((s, e) => s + e.usage!.input_tokens, 0),
      output_tokens: served
        .filter((e) => e.model === 'claude-opus-5-5')
        .reduce((s, e) => s + e.usage!.output_tokens, 0),
    });
    const cost = (await (
      await admin(`cost_report?starting_at=${day}T00:00:00Z&group_by[]=description`)
    ).json()) as any;
    const opusCost = cost.data[0].results.find((r: { model: string }) => r.model === 'claude-opus-5-5');
    const expected = served
      .filter((e) => e.model === 'claude-opus-5-5')
      .reduce((s, e) => s + listPriceCents(e.model!, e.usage!, new Date(e.startedAt))!, 0);
    expect(Number(opusCost.amount)).toBeCloseTo(expected, 6);
    expect(opusCost).toMatchObject({
      currency: 'USD',
      cost_type: 'tokens',
      description: 'Claude Opus 5.5 Usage',
    });
  });

  it("list the API keys it served, as the Admin API's key list does, with the id the reports group by", async () => {
    await ctx.client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'key?' }],
    });
    const list = (await (await admin('api_keys')).json()) as any;
    expect(list.has_more).toBe(false);
    const [key] = list.data;
    expect(key).toMatchObject({ id: apiKeyId(KEY), type: 'api_key', status: 'active', workspace_id: null });
    const [head, tail] = key.partial_key_hint.split('...');
    expect(KEY.startsWith(head) && KEY.endsWith(tail)).toBe(true);
    expect(key.partial_key_hint).not.toBe(KEY);
    expect(list.first_id).toBe(key.id);
    expect((await admin('api_keys', KEY)).status).toBe(401);
  });

  it('page by day buckets: seven a page by default, next_page taken back as page', async () => {
    const q = 'starting_at=2026-11-01T00:00:00Z&ending_at=2026-11-11T00:00:00Z';
    const first = (await (await admin(`usage_report/messages?${q}`)).json()) as any;
    expect(first.data).toHaveLength(7);
    expect(first.has_more).toBe(true);
    const second = (await (await admin(`usage_report/messages?${q}&page=${first.next_page}`)).json()) as any;
    expect(second.data.map((b: { starting_at: string }) => b.starting_at)).toEqual([
      '2026-11-08T00:00:00Z',
      '2026-11-09T00:00:00Z',
      '2026-11-10T00:00:00Z',
    ]);
    expect(second.has_more).toBe(false);
    expect(second.next_page).toBeNull();
    expect((await admin(`cost_report?${q}&limit=32`)).status).toBe(400);
    expect((await admin(`cost_report?${q}&page=nope`)).status).toBe(400);
  });

  it('take only the admin key, and refuse bad parameters in the provider shape', async () => {
    const wrong = await admin('usage_report/messages?starting_at=2026-11-01T00:00:00Z', KEY);
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).error.type).toBe('authentication_error');
    const bad = await admin('usage_report/messages?starting_at=nope');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const hourly = await admin('cost_report?starting_at=2026-11-01T00:00:00Z&bucket_width=1h');
    expect(hourly.status).toBe(400);
    // The provider's cost report groups by workspace_id or description only.
    const byModel = await admin('cost_report?starting_at=2026-11-01T00:00:00Z&group_by[]=model');
    expect(byModel.status).toBe(400);
    expect(((await byModel.json()) as any).error.message).toMatch(/workspace_id, description/);
  });
});
