import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config';
import { CliError, EXIT, type Backend } from './backend';

export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** The option a bare argument fills (`keygate key revoke key_…`). */
  positional?: string;
  /** Commands that manage the process or the database themselves. */
  run?(values: Values, config: Config): Promise<number>;
  /** Commands answered by the operator API: `json` for --json, `text` for people. */
  call?(values: Values, backend: Backend): Promise<{ json: unknown; text: string; exitCode?: number }>;
}

export const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);

export function required(values: Values, name: string, usage: string): string {
  const v = str(values[name]);
  if (!v) throw new CliError(`--${name} is required.\n\n${usage}`, EXIT.usage);
  return v;
}

export function positiveInt(values: Values, name: string): number | undefined {
  const v = str(values[name]);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new CliError(`--${name}: expected a whole number, got '${v}'.`, EXIT.usage);
  return n;
}

export const enc = encodeURIComponent;

/** `--account` as a path segment of the operator API. */
export function accountPath(values: Values, usage: string): string {
  return `/accounts/${enc(required(values, 'account', usage))}`;
}

/** Human lists note when there is more than was fetched. */
export function moreNote(page: { has_more?: boolean }, hint: string): string {
  return page.has_more ? `\n(more results: ${hint})` : '';
}

export const shortDate = (iso: unknown) =>
  typeof iso === 'string' ? iso.replace('T', ' ').replace(/\.\d{3}Z$/, 'Z') : null;
