import type { Logger } from '../lib/logger';
import { SecretBox } from '../lib/secret-box';
import type { Store } from '../store';

/**
 * Re-seals what earlier versions sealed (`v1`: one key for every purpose, bound to no row) in
 * the current format, a key per purpose bound to its row. Run at every start, after the
 * migrations; a value another instance re-sealed meanwhile is left as it is.
 */
export async function resealSecrets(
  store: Pick<Store, 'sealed'>,
  box: SecretBox,
  logger?: Logger,
): Promise<number> {
  let resealed = 0;
  for (const v of await store.sealed.withPrefix('v1.')) {
    if (!SecretBox.isLegacy(v.sealed)) continue;
    const at = { purpose: v.column, row: v.row };
    if (await store.sealed.replace(v, box.seal(box.open(v.sealed, at), at))) resealed++;
  }
  if (resealed) logger?.info('secrets re-sealed with per-purpose keys', { resealed });
  return resealed;
}
