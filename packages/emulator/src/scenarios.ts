import type { IncomingHttpHeaders } from 'node:http';
import { invalid } from './errors';

export const SCENARIOS = [
  'rate_limit',
  'overloaded',
  'api_error',
  'invalid_request',
  'stream_error',
  'stream_cut',
  'slow_first_byte',
  'paced',
  'multi_delta',
  'cache_write_5m',
  'cache_write_1h',
  'cache_read',
  'thinking',
  'malformed_tool_input',
  'long_silence',
] as const;

export type ScenarioName = (typeof SCENARIOS)[number];

/** One request's scenarios and their parameters (from `x-emulator-*` headers). */
export interface Scenario {
  /** As named by the request (or the default), for the ledger; null when none. */
  label: string | null;
  has: ReadonlySet<ScenarioName>;
  retryAfterS: number;
  cutAfter: number;
  delayMs: number;
  intervalMs: number;
  deltas: number;
  /** `x-emulator-output-tokens`: words in the reply text; null = the default. */
  outputTokens: number | null;
}

const NONE: ReadonlySet<ScenarioName> = new Set();
const KNOWN: ReadonlySet<string> = new Set(SCENARIOS);

const PLAIN: Scenario = {
  label: null,
  has: NONE,
  retryAfterS: 1,
  cutAfter: 4,
  delayMs: 2_000,
  intervalMs: 20,
  deltas: 32,
  outputTokens: null,
};

/** Reads the scenario of a request; throws invalid_request_error for unknown names or bad numbers. */
export function readScenario(headers: IncomingHttpHeaders, fallback: string | undefined): Scenario {
  const label = scenarioLabel(headers, fallback);
  const outputTokens = headers['x-emulator-output-tokens'];
  if (label === null && outputTokens === undefined) return PLAIN;
  const has = new Set<ScenarioName>();
  if (label !== null) {
    for (const raw of label.split(',')) {
      const name = raw.trim();
      if (name === '') continue;
      if (!KNOWN.has(name)) {
        throw invalid(`x-emulator-scenario: unknown scenario '${name}'; known: ${SCENARIOS.join(', ')}`);
      }
      has.add(name as ScenarioName);
    }
  }
  return {
    label,
    has,
    retryAfterS: num(headers, 'x-emulator-retry-after', PLAIN.retryAfterS, 0),
    cutAfter: num(headers, 'x-emulator-cut-after', PLAIN.cutAfter, 1),
    delayMs: num(headers, 'x-emulator-delay-ms', PLAIN.delayMs, 0),
    intervalMs: num(headers, 'x-emulator-interval-ms', PLAIN.intervalMs, 0),
    deltas: num(headers, 'x-emulator-deltas', PLAIN.deltas, 1),
    outputTokens: outputTokens === undefined ? null : num(headers, 'x-emulator-output-tokens', 0, 0),
  };
}

/** The scenario as the request named it, else the default; null for none. */
export function scenarioLabel(headers: IncomingHttpHeaders, fallback: string | undefined): string | null {
  const named = headers['x-emulator-scenario'];
  return typeof named === 'string' && named.trim() !== '' ? named : (fallback ?? null);
}

function num(headers: IncomingHttpHeaders, name: string, fallback: number, min: number): number {
  const raw = headers[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw invalid(`${name}: expected an integer >= ${min}, got '${String(raw)}'`);
  return value;
}
