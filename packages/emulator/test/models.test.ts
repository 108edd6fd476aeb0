import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { listPriceCents, MODELS } from '../src/index';
import { KEY, useEmulator } from './helpers';

const ctx = useEmulator();

describe('models', () => {
  it('lists every model across pages, newest first', async () => {
    const ids: string[] = [];
    for await (const model of ctx.client.models.list({ limit: 2 })) ids.push(model.id);
    expect(ids).toEqual(MODELS.map((m) => m.id));
    // ceil(9 / 2) pages, each its own request
    expect(ctx.emulator.ledger.entries.filter((e) => e.endpoint === 'models')).toHaveLength(
      Math.ceil(MODELS.length / 2),
    );
  });

  it('pages carry has_more, first_id and last_id; after_id and before_id move the window', async () => {
    const page = await ctx.client.models.list({ limit: 3 });
    expect(page.data.map((m) => m.id)).toEqual(MODELS.slice(0, 3).map((m) => m.id));
    expect(page).toMatchObject({ has_more: true, first_id: MODELS[0]!.id, last_id: MODELS[2]!.id });
    expect(page.data[0]).toEqual({
      type: 'model',
      id: MODELS[0]!.id,
      display_name: MODELS[0]!.display_name,
      created_at: expect.stringMatching(/Z$/),
    });

    const last = await ctx.client.models.list({ limit: 3, after_id: MODELS[MODELS.length - 4]!.id });
    expect(last.data.map((m) => m.id)).toEqual(MODELS.slice(-3).map((m) => m.id));
    expect(last.has_more).toBe(false);

    const before = (await (
      await fetch(`${ctx.emulator.url}/v1/models?limit=2&before_id=${MODELS[3]!.id}`, {
        headers: { 'x-api-key': KEY },
      })
    ).json()) as { data: Array<{ id: string }>; has_more: boolean };
    expect(before.data.map((m) => m.id)).toEqual([MODELS[1]!.id, MODELS[2]!.id]);
    expect(before.has_more).toBe(true);
  });

  it('retrieves a model by id or alias, and 404s an unknown one', async () => {
    expect((await ctx.client.models.retrieve('claude-haiku-4-5')).id).toBe('claude-haiku-4-5-20251001');
    expect((await ctx.client.models.retrieve(MODELS[0]!.id)).display_name).toBe(MODELS[0]!.display_name);
    const error = await ctx.client.models.retrieve('claude-unknown-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(ctx.emulator.ledger.last()).toMatchObject({
      endpoint: 'models',
      model: 'claude-unknown-1',
      status: 404,
      errorType: 'not_found_error',
    });
  });

  it('rejects a limit out of range', async () => {
    const res = await fetch(`${ctx.emulator.url}/v1/models?limit=0`, { headers: { 'x-api-key': KEY } });
    expect(res.status).toBe(400);
  });
});

describe("today's models", () => {
  it('serves every model the official SDK names, and prices each one it has a published price for', async () => {
    const sdkModels = [
      'claude-opus-4-6',
      'claude-opus-4-7',
      'claude-opus-4-8',
      'claude-opus-5',
      'claude-opus-5-5',
      'claude-sonnet-4-6',
      'claude-sonnet-5',
      'claude-sonnet-5-5',
      'claude-haiku-5-5',
      'claude-fable-5',
      'claude-fable-5-1',
      'claude-fable-5-2',
      'claude-mythos-5',
      'claude-mythos-5-1',
      'claude-mythos-5-2',
      'claude-mythos-preview',
      'claude-haiku-4-5',
      'claude-opus-4-5-20251101',
      'claude-sonnet-4-5-20250929',
    ];
    for (const id of sdkModels) {
      const m = await ctx.client.models.retrieve(id);
      expect(m.type).toBe('model');
    }
    const usage = {
      input_tokens: 1_000_000,
      output_tokens: 1_000_000,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      server_tool_use: { web_search_requests: 0 },
      service_tier: 'standard',
      speed: 'standard',
      inference_geo: 'global',
    };
    const at = new Date('2026-11-25T00:00:00Z');
    expect(listPriceCents('claude-opus-5-5', usage, at)).toBe(2400);
    expect(listPriceCents('claude-opus-5-5', usage, at, { batch: true })).toBe(1200);
    expect(listPriceCents('claude-opus-5-5', { ...usage, inference_geo: 'us' }, at)).toBeCloseTo(2640, 9);
    expect(listPriceCents('claude-opus-4-8', { ...usage, speed: 'fast' }, at)).toBe(6000);
    expect(listPriceCents('claude-mythos-preview', usage, at)).toBeNull();
  });

  it('answers an unknown model, or a typo, with the provider 404 in its error shape', async () => {
    for (const model of ['claude-sonet-4-5', 'gpt-4o', 'claude-opus-4']) {
      const res = await fetch(`${ctx.emulator.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(404);
      const body = (await res.json()) as {
        type: string;
        error: { type: string; message: string };
        request_id: string;
      };
      expect(body).toMatchObject({
        type: 'error',
        error: { type: 'not_found_error', message: `model: ${model}` },
      });
      expect(body.request_id).toMatch(/^req_/);
    }
  });

  it('reports speed and inference_geo in usage, and refuses inference_geo on models before Opus 4.6', async () => {
    const msg = await ctx.client.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hello' }],
      speed: 'fast',
      inference_geo: 'us',
    });
    expect(msg.usage).toMatchObject({ speed: 'fast', inference_geo: 'us', service_tier: 'standard' });
    const res = await fetch(`${ctx.emulator.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 10,
        inference_geo: 'us',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(400);
  });
});
