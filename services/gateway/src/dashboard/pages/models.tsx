/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { usageBy } from '../data';
import { usageTable, type PageCtx, type PageResult } from './page';

export async function modelsPage(p: PageCtx): Promise<PageResult> {
  const table = usageTable('models', 'Usage by model', 'Model', await usageBy(p.scope, 'model'));
  return {
    title: 'Models',
    section: '/dashboard/models',
    tables: [table],
    body: <TableView table={table} csvHref={p.csv(table.id)} />,
  };
}
