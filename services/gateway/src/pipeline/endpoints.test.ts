import { describe, expect, it } from 'vitest';
import { appForRouteTable } from '../../test/kit/route-table';
import { BODY_RULES } from './body-rules';
import { endpointKey, template, type Endpoint } from './endpoint-row';
import { ENDPOINTS } from './endpoints';

// `app.use` entries are registered as method ALL; a handler registered for every method
// (`app.all`) is ALL too, and is told apart by having a row.
const rowKeys = ENDPOINTS.map(endpointKey);
const routes = [...new Set(appForRouteTable().routes.map((r) => endpointKey(r)))];
const served = routes.filter((key) => !key.startsWith('ALL ') || rowKeys.includes(key));

/** What the author of a new route adds, as a line of the table. */
function rowToAdd(key: string): string {
  const [method, path] = key.split(' ') as [string, string];
  return (
    `${key} has no row in services/gateway/src/pipeline/endpoints.ts: add '${method} ${path}' to the ` +
    `family it belongs to (its face, credentials, body spec, path and body references, model fields, ` +
    `limits and recording), or a family(...) of its own, and give its body reader the row's spec (BODIES).`
  );
}

describe('the endpoint table', () => {
  it('has a row for every route the app serves', () => {
    const missing = served.filter((key) => !rowKeys.includes(key)).map(rowToAdd);
    expect(missing).toEqual([]);
    expect(served.length).toBeGreaterThan(300);
  });

  it('has no row without a route, and no route twice', () => {
    expect(rowKeys.filter((key) => !routes.includes(key))).toEqual([]);
    expect(rowKeys.filter((key, i) => rowKeys.indexOf(key) !== i)).toEqual([]);
  });

  it('gives every endpoint of BODY_RULES its model and reference fields', () => {
    const byTemplate = new Map<string, Endpoint>(
      ENDPOINTS.map((e) => [`${e.method} ${template(e.path)}`, e]),
    );
    for (const [key, rules] of Object.entries(BODY_RULES)) {
      const row: Endpoint | undefined = byTemplate.get(key);
      // The passthrough's neighbours (deployments, dreams) have no route of their own.
      if (!row) continue;
      expect({ key, models: row.models, refs: row.bodyRefs }).toEqual({
        key,
        models: rules.models,
        refs: rules.refs,
      });
    }
    expect(byTemplate.get('POST /v1/messages')?.models).toEqual(['model']);
  });

  it('declares a body for every write and none for every read', () => {
    for (const e of ENDPOINTS) {
      if (e.method === 'GET' || e.method === 'HEAD')
        expect([endpointKey(e), e.body.kind]).toEqual([endpointKey(e), 'none']);
      // Every row that takes credentials names at least one.
      expect(e.credentials.length).toBeGreaterThan(0);
    }
  });
});
