/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { raw } from 'hono/html';
import { GatewayError } from '../../lib/errors';
import type { Guides } from '../guides';
import type { PageResult } from './page';

const SECTION = '/dashboard/guides';

/** Every guide, linked, then the index (docs/README.md) that says which to read when. */
export function guidesPage(guides: Guides): PageResult {
  const index = guides.get('index');
  const body = (
    <>
      <nav aria-label="Guides" class="guide-list">
        <ul>
          {guides.list.map((g) => (
            <li>
              <a href={`${SECTION}/${g.slug}`}>{g.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      {index && <article class="guide">{raw(guides.html(index))}</article>}
    </>
  );
  return { title: 'Guides', section: SECTION, tables: [], body, periodless: true };
}

/** One guide, rendered from its Markdown. */
export function guidePage(guides: Guides, slug: string): PageResult {
  const guide = guides.get(slug);
  if (!guide) throw new GatewayError('not_found_error', `No guide '${slug}': the Guides page lists them.`);
  const body = (
    <>
      <p>
        <a href={SECTION}>All guides</a>
      </p>
      <article class="guide">{raw(guides.html(guide))}</article>
    </>
  );
  return { title: guide.title, section: SECTION, tables: [], body, periodless: true };
}
