/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { UnpricedBanner } from '../components/unpriced-banner';
import { unpricedModels, usageBy } from '../data';
import { usageTable, type PageCtx, type PageResult } from './page';

export async function modelsPage(p: PageCtx): Promise<PageResult> {
  const [lines, unpriced] = await Promise.all([usageBy(p.scope, 'model'), unpricedModels(p.scope)]);
  const table = usageTable('models', 'Usage by model', 'Model', lines);
  return {
    title: 'Models',
    section: '/dashboard/models',
    tables: [table],
    body: (
      <>
        <UnpricedBanner models={unpriced} />
        <TableView table={table} csvHref={p.csv(table.id)} />
      </>
    ),
  };
}
