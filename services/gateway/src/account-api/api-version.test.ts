import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operation } from '../lib/operation';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import { RENAMED, reshape, versionedShapes, versionOf } from './api-version';

// A made-up rename (a widget's `colour` becomes `color`), to drive the mechanism; the real table is RENAMED.
const TABLE = { '2023-06-01': {}, '2026-10-21': { widget: { colour: 'color' } } } as const;

function app() {
  const a = new Hono();
  a.onError((err, c) => c.json({ error: err.message }, 400));
  a.use('*', bodyReader(BODIES.api));
  a.use('*', versionedShapes(TABLE));
  const widget = (colour: string | undefined) => ({ type: 'widget', id: 'w1', colour: colour ?? null });
  a.get(
    '/widgets',
    operation({ tag: 't', summary: 's', query: z.strictObject({ colour: z.string().optional() }) }),
    (c) => c.json({ data: [widget(c.req.valid('query').colour)], has_more: false, colour: 'not a widget' }),
  );
  a.post(
    '/widgets',
    operation({ tag: 't', summary: 's', body: z.strictObject({ colour: z.string() }) }),
    (c) => c.json(widget(c.req.valid('json').colour)),
  );
  return a;
}

const headers = (version: string) => ({ 'anthropic-version': version, 'content-type': 'application/json' });

describe('organization API shapes per anthropic-version', () => {
  it('reads a version from the header: 2026-10-21 and later take the new shapes, anything else the old', () => {
    expect(versionOf('2026-10-21')).toBe('2026-10-21');
    expect(versionOf('2027-01-01')).toBe('2026-10-21');
    expect(versionOf('2023-06-01')).toBe('2023-06-01');
    expect(versionOf(undefined)).toBe('2023-06-01');
    expect(Object.keys(RENAMED).sort()).toEqual(['2023-06-01', '2026-10-21']);
  });

  it('renames the fields of the named object types only, in lists and nested, keeping key order', () => {
    const out = reshape(
      {
        type: 'page',
        colour: 'x',
        data: [{ type: 'widget', id: 'a', colour: 'red', parts: [{ type: 'widget', colour: 'b' }] }],
      },
      TABLE['2026-10-21'],
    );
    expect(out).toEqual({
      type: 'page',
      colour: 'x',
      data: [{ type: 'widget', id: 'a', color: 'red', parts: [{ type: 'widget', color: 'b' }] }],
    });
    expect(Object.keys((out as { data: object[] }).data[0]!)).toEqual(['type', 'id', 'color', 'parts']);
  });

  it('answers 2023-06-01 as its serializers write it, and 2026-10-21 with the new names', async () => {
    const old = await (await app().request('/widgets?colour=red', { headers: headers('2023-06-01') })).json();
    expect(old).toEqual({
      data: [{ type: 'widget', id: 'w1', colour: 'red' }],
      has_more: false,
      colour: 'not a widget',
    });
    const now = await (await app().request('/widgets?color=red', { headers: headers('2026-10-21') })).json();
    expect(now).toEqual({
      data: [{ type: 'widget', id: 'w1', color: 'red' }],
      has_more: false,
      colour: 'not a widget',
    });
  });

  it('takes the new names in bodies and query parameters under the new version, and only there', async () => {
    const made = await app().request('/widgets', {
      method: 'POST',
      headers: headers('2026-10-21'),
      body: JSON.stringify({ color: 'blue' }),
    });
    expect(await made.json()).toEqual({ type: 'widget', id: 'w1', color: 'blue' });
    const oldWithNew = await app().request('/widgets', {
      method: 'POST',
      headers: headers('2023-06-01'),
      body: JSON.stringify({ color: 'blue' }),
    });
    expect(oldWithNew.status).toBe(400);
    const unknown = await app().request('/widgets?color=red', { headers: headers('2023-06-01') });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(await unknown.json())).toContain("Unknown query parameter 'color'");
  });

  it("takes the SDK beta namespace's ?beta=true on every route, and no other value of beta", async () => {
    const marked = await app().request('/widgets?beta=true&colour=red', { headers: headers('2023-06-01') });
    expect(marked.status).toBe(200);
    expect(await marked.json()).toMatchObject({ data: [{ colour: 'red' }] });
    const other = await app().request('/widgets?beta=yes', { headers: headers('2023-06-01') });
    expect(other.status).toBe(400);
    expect(JSON.stringify(await other.json())).toContain("Unknown query parameter 'beta'");
  });
});
