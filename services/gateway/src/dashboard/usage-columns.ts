import type { UsageLine } from './data';
import { type Cell, type Column, num, usd } from './table';

/** Every usage table's figures, each in its own column: never one total that hides cache tokens. */
export const USAGE_COLUMNS: Column[] = [
  'Uncached input',
  'Cache writes 5m',
  'Cache writes 1h',
  'Cache reads',
  'Output',
  'Web searches',
  'Cost (USD)',
  'Requests',
  'Errors',
].map((label) => ({ label, numeric: true }));

export function usageCells(l: UsageLine): Cell[] {
  const f = l.figures;
  return [
    num(f.uncached_input_tokens),
    num(f.cache_creation.ephemeral_5m_input_tokens),
    num(f.cache_creation.ephemeral_1h_input_tokens),
    num(f.cache_read_input_tokens),
    num(f.output_tokens),
    num(f.server_tool_use.web_search_requests),
    usd(l.costCents),
    num(f.requests),
    num(f.errors),
  ];
}
