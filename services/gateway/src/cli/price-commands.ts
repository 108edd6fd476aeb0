import { readFileSync } from 'node:fs';
import { CliError, EXIT, type Json } from './backend';
import { required, str, type Command, type Values } from './command';
import { table } from './output';

const RATES = ['input', 'cache_write_5m', 'cache_write_1h', 'cache_read', 'output'] as const;

function rate(values: Values, name: string, usage: string): number {
  const v = required(values, name.replaceAll('_', '-'), usage);
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new CliError(
      `--${name.replaceAll('_', '-')}: expected USD per million tokens, got '${v}'.`,
      EXIT.usage,
    );
  return n;
}

const rowOf = (m: Json) => {
  const now = m.prices.at(-1);
  return {
    model: m.id,
    family: m.family,
    effective_from: now.effective_from ?? 'always',
    input: now.input,
    output: now.output,
    cache_5m: now.cache_write_5m,
    cache_1h: now.cache_write_1h,
    cache_read: now.cache_read,
    source: now.origin === 'operator' ? 'operator' : 'catalog',
  };
};

export const priceCommands: Record<string, Command> = {
  'prices list': {
    summary: 'The price catalog in force, and the models called lately that have no price',
    usage: 'Usage: keygate prices list [--json]',
    options: {},
    async call(_values, backend) {
      const c = await backend.request('GET', '/prices');
      const unpriced = c.unpriced_models.length
        ? `\n\nUnpriced (called, no price; cost reports leave them out): ${c.unpriced_models.join(', ')}`
        : '';
      return { json: c, text: table(c.data.map(rowOf)) + unpriced };
    },
  },

  'prices set': {
    summary: "Add or override a model's price (USD per million tokens) from a date",
    usage: `Usage: keygate prices set --model ID --input N --output N --cache-write-5m N --cache-write-1h N --cache-read N [--from YYYY-MM-DD] [--family NAME] [--json]

The price is in force from --from (omitted: always) until the model's next price. Costs are
derived from tokens when read, so calls already made in that window are repriced.`,
    options: {
      model: { type: 'string' },
      from: { type: 'string' },
      family: { type: 'string' },
      ...Object.fromEntries(RATES.map((r) => [r.replaceAll('_', '-'), { type: 'string' as const }])),
    },
    async call(values, backend) {
      const price: Record<string, unknown> = {
        model: required(values, 'model', this.usage),
        source: 'keygate prices set',
      };
      for (const r of RATES) price[r] = rate(values, r, this.usage);
      if (str(values.from)) price.effective_from = str(values.from);
      if (str(values.family)) price.family = str(values.family);
      const res = await backend.request('POST', '/prices', { body: { prices: [price] } });
      return { json: res, text: `Price set for ${price.model} from ${str(values.from) ?? 'always'}.` };
    },
  },

  'prices import': {
    summary:
      "Import prices from a file: Keygate's price rows (a JSON array) or LiteLLM's model_prices_and_context_window.json",
    usage: 'Usage: keygate prices import --file PATH [--from YYYY-MM-DD] [--json]',
    options: { file: { type: 'string' }, from: { type: 'string' } },
    async call(values, backend) {
      const path = required(values, 'file', this.usage);
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(path, 'utf8'));
      } catch (error) {
        throw new CliError(`--file ${path}: ${(error as Error).message}`, EXIT.usage);
      }
      const body = Array.isArray(json)
        ? { prices: json }
        : { litellm: json, ...(str(values.from) ? { effective_from: str(values.from) } : {}) };
      const res = await backend.request('POST', '/prices', { body });
      return { json: res, text: `Imported ${res.added.length} price(s).` };
    },
  },
};
