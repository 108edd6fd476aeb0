import { describe, expect, it } from 'vitest';
import { BODY_RULES, rulesFor, valuesAt } from '../pipeline/body-rules';
import { forwardable } from './passthrough-routes';

describe('the table of model and reference fields', () => {
  it('keys every entry by method and path template, as call.ts names endpoints', () => {
    // The provider's paths, and the cloud fronts' (cloud-fronts/: Bedrock's and Vertex's own).
    for (const endpoint of Object.keys(BODY_RULES))
      expect(endpoint).toMatch(/^(POST|PATCH|PUT) \/(v1|bedrock|vertex\/v1)\/[a-z_/{}-]+$/);
  });

  it('finds each string at a field, with its place and holder; other types name nothing', () => {
    const body = {
      requests: [{ params: { model: 'a' } }, { params: { model: 7 } }, { params: { model: 'b' } }, null],
      agent: {
        id: 'agent_1',
        skills: [
          { type: 'anthropic', skill_id: 'pptx' },
          { type: 'custom', skill_id: 's_1' },
        ],
      },
    };
    expect(valuesAt(body, 'requests[].params.model').map((f) => [f.where, f.value])).toEqual([
      ['requests[0].params.model', 'a'],
      ['requests[2].params.model', 'b'],
    ]);
    expect(valuesAt(body, 'agent').length).toBe(0);
    expect(valuesAt(body, 'agent.id').map((f) => f.value)).toEqual(['agent_1']);
    expect(valuesAt(body, 'agent.skills[].skill_id').map((f) => f.holder.type)).toEqual([
      'anthropic',
      'custom',
    ]);
    expect(valuesAt('not an object', 'model')).toEqual([]);
  });

  it('an endpoint with no entry still has its top-level model checked', () => {
    expect(rulesFor('POST /v1/something_new').models).toEqual(['model', 'model.id']);
  });
});

describe('forwardable: what the open passthrough may send with the account key', () => {
  it.each(['/v1/something_new', '/v1/something_new/item_01AbC9', '/v1/memory_stores/mem_1'])(
    'forwards %s',
    (path) => expect(forwardable(path)).toBe(true),
  );

  it.each([
    '/v1//organizations/me',
    '/v1/organizations',
    '/v1/Organizations/me',
    '/v1/%4Frganizations/me',
    '/v1/organizations;x/me',
    '/v1/vaults',
    '/v1/VAULTS/v_1',
    '/v1/%76aults',
    '/v1/a/./b',
    '/v1/a/%2e%2e/b',
    '/v1/a%2fb',
    '/v1/a%5cb',
    '/v1/a%252fb',
    '/v1/a/',
    '/v1/a//b',
    '/v1/a%00',
    '/v1/a%',
    '/v1',
    '/v2/x',
    '/v1/files/file_1/new_thing',
    '/v1/Files;x/file_1',
    '/v1/messages/batches/b_1/new_thing',
  ])('refuses %s', (path) => expect(forwardable(path)).toBe(false));
});
