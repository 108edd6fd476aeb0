import { Hono } from 'hono';
import { openApiDocument, type OpenApiDocument, type RouteTable } from './openapi';
import { referencePage } from './page';

const VERSION = '0.1.0';

/**
 * `/openapi.json` and `/docs`, read off the app's own route table on first use: both public,
 * as they describe the API and hold no account's data.
 */
export function apiDocsRoutes(app: RouteTable): Hono {
  const docs = new Hono();
  let doc: OpenApiDocument | null = null;
  const document = () => (doc ??= openApiDocument(app, VERSION));
  docs.get('/openapi.json', (c) => c.json(document()));
  docs.get('/docs', async (c) => c.html(await referencePage(document())));
  return docs;
}
