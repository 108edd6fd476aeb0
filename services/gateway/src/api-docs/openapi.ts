import { COMPOSED_HANDLER } from 'hono/utils/constants';
import { z } from 'zod';
import { arrayParams, specOf, type OperationSpec } from '../lib/operation';

/** The APIs the document covers, by path prefix, with how each is authenticated. */
export const DOCUMENTED_APIS = [
  { prefix: '/v1/organizations', security: [{ adminKey: [] }, { adminBearer: [] }] },
  { prefix: '/operator/v1', security: [{ operatorToken: [] }] },
] as const;

/**
 * Routes that are not JSON APIs: neither in the document nor held to `operation()`'s rules
 * (the route-table tests leave out exactly these). The Stripe webhook and the dashboard are
 * outside the documented prefixes anyway; naming them keeps that true if they move.
 */
export const NOT_JSON_APIS: readonly { method: string; path: RegExp; why: string }[] = [
  {
    method: 'GET',
    path: /\/invoices\/:file\{[^}]*\.html\}$/,
    why: 'the printable invoice, an HTML page for a browser',
  },
  {
    method: 'POST',
    path: /^\/billing\/stripe\/webhook$/,
    why: "Stripe's events, verified by signature over the raw body",
  },
  {
    method: '*',
    path: /^\/dashboard(\/|$)/,
    why: 'the dashboard, HTML pages and forms behind a session cookie',
  },
];

export const notJsonApi = (r: { method: string; path: string }) =>
  NOT_JSON_APIS.some((x) => (x.method === '*' || x.method === r.method) && x.path.test(r.path));

type Spec = OperationSpec<z.ZodObject | undefined, z.ZodType | undefined>;
type JsonSchema = Record<string, unknown>;

/** What the document needs of an app: its route table. */
export interface RouteTable {
  routes: readonly { method: string; path: string; handler: object }[];
}

export interface DocumentedRoute {
  method: string;
  /** Hono's form: `/v1/organizations/users/:id`. */
  path: string;
  spec: Spec | undefined;
}

/** The account and operator JSON routes of an app's route table, with the spec each was declared with (if any). */
export function documentedRoutes(app: RouteTable): DocumentedRoute[] {
  const byRoute = new Map<string, DocumentedRoute>();
  for (const r of app.routes) {
    if (
      r.method === 'ALL' ||
      notJsonApi(r) ||
      !DOCUMENTED_APIS.some((a) => r.path === a.prefix || r.path.startsWith(`${a.prefix}/`))
    )
      continue;
    const id = `${r.method} ${r.path}`;
    const route = byRoute.get(id) ?? { method: r.method, path: r.path, spec: undefined };
    route.spec ??= specOf(unwrap(r.handler));
    byRoute.set(id, route);
  }
  return [...byRoute.values()];
}

/** A sub-app with its own error handler has its handlers wrapped when mounted; the original is kept on the wrapper. */
function unwrap(handler: object): object {
  let h: object = handler;
  for (let inner = composed(h); inner; inner = composed(h)) h = inner;
  return h;
}

const composed = (h: object) => (h as Record<string, object | undefined>)[COMPOSED_HANDLER];

export const openApiPath = (path: string) => path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}');

function jsonSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

function parameters(path: string, spec: Spec) {
  const inPath = [...path.matchAll(/:(\w+)/g)].map((m) => ({
    name: m[1]!,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (!spec.query) return inPath;
  const object = jsonSchema(spec.query) as { properties?: Record<string, JsonSchema>; required?: string[] };
  const arrays = arrayParams(spec.query);
  const inQuery = Object.entries(object.properties ?? {}).map(([name, schema]) => {
    const array = arrays.includes(name);
    return {
      name: array ? `${name}[]` : name,
      in: 'query',
      required: object.required?.includes(name) ?? false,
      ...(array
        ? {
            style: 'form',
            explode: true,
            description: `Repeat for several values (\`${name}[]=a&${name}[]=b\`); \`${name}=a,b\` works too.`,
          }
        : {}),
      schema,
    };
  });
  return [...inPath, ...inQuery];
}

const ERROR = {
  type: 'object',
  required: ['type', 'error', 'request_id'],
  properties: {
    type: { const: 'error' },
    error: {
      type: 'object',
      required: ['type', 'message'],
      properties: { type: { type: 'string' }, message: { type: 'string' } },
    },
    request_id: { type: 'string' },
  },
};

function operationOf(route: DocumentedRoute & { spec: Spec }, security: readonly object[]) {
  const { method, path, spec } = route;
  const forAccount = path.startsWith('/operator/v1/accounts/:account_id/') && spec.tag !== 'Operator';
  const refused = Object.keys(spec.refused ?? {});
  return {
    operationId: `${method.toLowerCase()}${openApiPath(path)
      .replace(/[{}]/g, '')
      .replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: spec.summary,
    ...(spec.description || refused.length
      ? {
          description: [
            spec.description,
            refused.length ? `Refused with a 400 that says why: ${refused.join(', ')}.` : '',
          ]
            .filter(Boolean)
            .join('\n\n'),
        }
      : {}),
    tags: [forAccount ? `Operator: ${spec.tag}` : spec.tag],
    security,
    parameters: parameters(path, spec),
    ...(spec.body
      ? {
          requestBody: {
            required: !spec.optionalBody,
            content: { 'application/json': { schema: jsonSchema(spec.body) } },
          },
        }
      : {}),
    responses: {
      [String(spec.status ?? 200)]: {
        description: 'Success',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      default: {
        description: "An error, in the provider's shape",
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    },
  };
}

/** The OpenAPI 3.1 document of the account and operator APIs, read off the app's route table. */
export function openApiDocument(app: RouteTable, version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of documentedRoutes(app)) {
    if (!route.spec) continue;
    const api = DOCUMENTED_APIS.find((a) => route.path.startsWith(a.prefix))!;
    const key = openApiPath(route.path);
    paths[key] = {
      ...paths[key],
      [route.method.toLowerCase()]: operationOf(route as DocumentedRoute & { spec: Spec }, api.security),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keygate account and operator APIs',
      version,
      description:
        "The account API answers in the provider's Admin API shapes (admin key as `x-api-key` or Bearer); the operator API manages accounts (operator token as Bearer). Errors always come in the provider's error shape with a `request-id` header.",
    },
    paths,
    components: {
      schemas: { Error: ERROR },
      securitySchemes: {
        adminKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'An admin key, `kg_admin_…`.',
        },
        adminBearer: { type: 'http', scheme: 'bearer', description: 'An admin key, `kg_admin_…`.' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'KEYGATE_OPERATOR_TOKEN.' },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof openApiDocument>;
