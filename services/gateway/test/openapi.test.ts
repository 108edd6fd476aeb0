import { validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { DOCUMENTED_APIS, documentedRoutes, notJsonApi, openApiPath } from '../src/api-docs/openapi';
import { appForRouteTable } from './kit/route-table';

const app = appForRouteTable();

const routes = documentedRoutes(app);
const fetchDocument = async () => (await app.request('/openapi.json')).json() as Promise<any>;

describe('OpenAPI document of the account and operator APIs', () => {
  it('declares every account and operator route of the route table with operation()', () => {
    // Both APIs and the account API's routes under the operator's account prefix.
    expect(routes.some((r) => r.path === '/v1/organizations/usage_report/claude_code')).toBe(true);
    expect(routes.some((r) => r.path === '/operator/v1/accounts/:account_id/api_keys/:id/rotate')).toBe(true);
    expect(routes.filter((r) => !r.spec).map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it('leaves out exactly the routes that are not JSON APIs: the printable invoice, the Stripe webhook, the dashboard', () => {
    const all = [
      ...new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`)),
    ];
    const left = all.filter((id) => {
      const [method, path] = id.split(' ') as [string, string];
      return notJsonApi({ method, path });
    });
    const invoice = '/invoices/:file{inv_[0-9A-Za-z]+\\.html}';
    expect(left.filter((id) => !id.includes(' /dashboard')).sort()).toEqual([
      `GET /operator/v1/accounts/:account_id${invoice}`,
      `GET /v1/organizations${invoice}`,
      'POST /billing/stripe/webhook',
    ]);
    expect(left.filter((id) => id.includes(' /dashboard')).length).toBeGreaterThan(5);
    // Under the documented prefixes, only the printable invoices are left out.
    const underApis = app.routes.filter(
      (r) => r.method !== 'ALL' && DOCUMENTED_APIS.some((a) => r.path.startsWith(`${a.prefix}/`)),
    );
    const documented = new Set(routes.map((r) => `${r.method} ${r.path}`));
    expect(
      [...new Set(underApis.map((r) => `${r.method} ${r.path}`).filter((id) => !documented.has(id)))].sort(),
    ).toEqual([`GET /operator/v1/accounts/:account_id${invoice}`, `GET /v1/organizations${invoice}`]);
  });

  it('lists every one of those routes, under its method and path', async () => {
    const doc = await fetchDocument();
    const missing = routes
      .filter((r) => !doc.paths[openApiPath(r.path)]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
    const operations = Object.values(doc.paths).flatMap((m: any) => Object.keys(m));
    expect(operations).toHaveLength(routes.length);
  });

  it('is valid OpenAPI 3.1', async () => {
    const doc = await fetchDocument();
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('documents parameters from the schemas that validate them', async () => {
    const op = (await fetchDocument()).paths['/v1/organizations/usage_report/messages'].get;
    const param = (name: string) => op.parameters.find((p: any) => p.name === name);
    expect(param('starting_at')).toMatchObject({ in: 'query', required: true, schema: { type: 'string' } });
    expect(param('bucket_width').schema).toMatchObject({ enum: ['1m', '1h', '1d'], default: '1d' });
    expect(param('group_by[]')).toMatchObject({
      required: false,
      schema: {
        type: 'array',
        items: { enum: expect.arrayContaining(['api_key_id', 'account_id', 'model']) },
      },
    });
    expect(param('group_by[]').schema.items.enum).not.toContain('workspace_id');
    expect(op.description).toMatch(/workspace_ids/);
    const create = (await fetchDocument()).paths['/v1/organizations/api_keys'].post;
    expect(create.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: { kind: { enum: ['live', 'test', 'admin'] } },
    });
    expect(Object.keys(create.responses)).toContain('201');
    const rotate = (await fetchDocument()).paths['/operator/v1/accounts/{account_id}/api_keys/{id}/rotate']
      .post;
    expect(rotate.parameters.map((p: any) => [p.name, p.in])).toEqual([
      ['account_id', 'path'],
      ['id', 'path'],
    ]);
    expect(rotate.security).toEqual([{ operatorToken: [] }]);
    expect(rotate.requestBody.required).toBe(false);
  });

  it('serves a reference page from our own origin listing every operation', async () => {
    const res = await app.request('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const page = await res.text();
    expect(page).not.toMatch(/<script|https?:\/\/(?!json-schema)/);
    for (const r of routes) expect(page).toContain(`<code>${openApiPath(r.path)}</code>`);
  });
});
