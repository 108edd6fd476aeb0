import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { MODELS } from '../src/index';
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
