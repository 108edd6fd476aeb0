/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';

/** Models called in the period that have no price: their cost is left out, never guessed. */
export const UnpricedBanner: FC<{ models: string[] }> = ({ models }) => {
  if (models.length === 0) return null;
  return (
    <aside class="banner standing soon" aria-labelledby="unpriced-title" data-unpriced={models.join(' ')}>
      <h2 id="unpriced-title">Some calls have no price</h2>
      <p>
        Keygate has no price for {models.map((m, i) => [i > 0 ? ', ' : '', <code>{m}</code>])}: the tokens are
        counted, but the costs shown leave these calls out.{' '}
        <a href="/docs#post_operator_v1_prices">Set its price</a> (operator API or{' '}
        <code>keygate prices set</code>); past calls are then priced too.
      </p>
    </aside>
  );
};
