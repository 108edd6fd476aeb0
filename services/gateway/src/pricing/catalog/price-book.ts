import { readFileSync } from 'node:fs';
import type { Store } from '../../store';
import { Prices } from '../prices';
import { buildCatalog, parsePriceFile, toRecord, type OperatorPrice } from './operator-rows';

/**
 * The gateway's prices: the bundled catalog, the price file (KEYGATE_PRICE_FILE) and the
 * operator's rows, built into the catalog every cost of this gateway is derived from.
 */
export class PriceBook extends Prices {
  readonly #store: Pick<Store, 'prices'>;
  readonly #fileRows: OperatorPrice[];

  constructor(store: Pick<Store, 'prices'>, fileRows: OperatorPrice[] = []) {
    super();
    this.#store = store;
    this.#fileRows = fileRows;
  }

  /** Reads the stored rows and puts the catalog they build in force. */
  async reload(): Promise<void> {
    this.use(buildCatalog(this.#fileRows, await this.#store.prices.list()));
  }

  /** Models called since `since` (one account's, or all) that have no price now: unpriced. */
  async unpricedSince(accountId: string | null, since: Date, now: Date): Promise<string[]> {
    const seen = await this.#store.prices.modelsSince(accountId, since);
    return seen.filter((m) => this.catalog.lookup(m, now) === null);
  }

  /** Stores operator prices (each in force from its effective date) and reloads. */
  async add(prices: OperatorPrice[], actor: string): Promise<void> {
    await this.#store.prices.upsert(prices.map((p) => toRecord(p, actor)));
    await this.reload();
  }
}

/** The rows of a price file (operator prices as a JSON array, or LiteLLM's format); fails fast. */
export function readPriceFile(path: string | null): OperatorPrice[] {
  if (!path) return [];
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`KEYGATE_PRICE_FILE ${path}: ${(error as Error).message}`);
  }
  try {
    return parsePriceFile(json, `file:${path}`);
  } catch (error) {
    throw new Error(`KEYGATE_PRICE_FILE ${path}: not a price list (${(error as Error).message})`);
  }
}
