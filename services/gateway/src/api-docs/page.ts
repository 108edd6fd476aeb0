import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { OpenApiDocument } from './openapi';

interface Parameter {
  name: string;
  in: string;
  required: boolean;
  description?: string;
  schema: Record<string, unknown>;
}

interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  parameters: Parameter[];
  requestBody?: { required: boolean; content: { 'application/json': { schema: unknown } } };
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#1a1a1a}
h1{font-size:1.5rem}h2{margin-top:2.5rem;border-bottom:1px solid #ccc}h3{font-size:1rem;margin:1.5rem 0 .25rem}
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f4f4f4;padding:.5rem;overflow-x:auto}
.m{display:inline-block;min-width:4.5rem;font-weight:700}table{border-collapse:collapse;width:100%}
th,td{text-align:left;border-bottom:1px solid #e4e4e4;padding:.25rem .5rem;vertical-align:top}
nav a{margin-right:1rem}@media(max-width:40rem){td:nth-child(4),th:nth-child(4){display:none}}`;

/** A short reading of a parameter's schema: its type, values, bounds and default. */
function describe(schema: Record<string, unknown>): string {
  const s = (schema.type === 'array' ? (schema.items as Record<string, unknown>) : schema) ?? {};
  const parts: string[] = [];
  if (Array.isArray(s.enum)) parts.push(`one of ${s.enum.join(', ')}`);
  else if (Array.isArray(s.anyOf))
    parts.push((s.anyOf as Record<string, unknown>[]).map(describe).join(' or '));
  else if (s.type) parts.push(String(s.type));
  if (s.pattern) parts.push('RFC 3339 timestamp or date');
  if (s.minimum !== undefined) parts.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined) parts.push(`≤ ${s.maximum}`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return (schema.type === 'array' ? 'list: ' : '') + parts.join(', ');
}

function operationHtml(
  method: string,
  path: string,
  op: Operation,
): HtmlEscapedString | Promise<HtmlEscapedString> {
  const body = op.requestBody?.content['application/json'].schema;
  return html`<section id="${op.operationId}">
    <h3><span class="m">${method.toUpperCase()}</span> <code>${path}</code></h3>
    <p>${op.summary}</p>
    ${op.description ? html`<p>${op.description}</p>` : ''}
    ${
      op.parameters.length
        ? html`<table>
          <thead><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr></thead>
          <tbody>${op.parameters.map(
            (p) =>
              html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : 'no'}</td><td>${describe(p.schema)}${p.description ? html`<br />${p.description}` : ''}</td></tr>`,
          )}</tbody>
        </table>`
        : ''
    }
    ${body ? html`<p>JSON body${op.requestBody!.required ? '' : ' (optional)'}:</p><pre>${JSON.stringify(body, null, 2)}</pre>` : ''}
  </section>`;
}

/** The reference page: every operation of the document, by tag, plain HTML from our own origin. */
export function referencePage(doc: OpenApiDocument) {
  const byTag = new Map<string, [string, string, Operation][]>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods as Record<string, Operation>)) {
      const tag = op.tags[0]!;
      byTag.set(tag, [...(byTag.get(tag) ?? []), [method, path, op]]);
    }
  }
  const tags = [...byTag.keys()];
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${doc.info.title}</title>
    <style>${raw(STYLE)}</style>
  </head>
  <body>
    <main>
      <h1>${doc.info.title} <small>${doc.info.version}</small></h1>
      <p>${doc.info.description}</p>
      <p>The machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
      <nav aria-label="Sections">${tags.map((t) => html`<a href="#${encodeURIComponent(t)}">${t}</a>`)}</nav>
      ${tags.map((t) => html`<h2 id="${encodeURIComponent(t)}">${t}</h2>${byTag.get(t)!.map(([m, p, op]) => operationHtml(m, p, op))}`)}
    </main>
  </body>
</html>`;
}
