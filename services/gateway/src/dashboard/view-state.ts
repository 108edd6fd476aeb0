import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import {
  dayStart,
  localDate,
  monthStart,
  nextDayStart,
  shiftDays,
  startOfDay,
  UTC,
} from '../reports/time-zone';

export const PERIODS = {
  today: 'Today',
  '7d': '7 days',
  '30d': '30 days',
  month: 'This month',
  'last-month': 'Last month',
  custom: 'Custom',
} as const;
export type Period = keyof typeof PERIODS;
export const SPLITS = { member: 'Member', key: 'Key', model: 'Model' } as const;
export type Split = keyof typeof SPLITS;

const DAY = 86_400_000;
const MAX_DAYS = 400;

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-11-20');
const id = z.string().trim().min(1).max(200).optional();

/** Everything the URL holds: the period, the chart's split and the filters, kept from page to page. */
const State = z.object({
  period: z.enum(Object.keys(PERIODS) as [Period, ...Period[]]).default('7d'),
  from: date.optional(),
  to: date.optional(),
  split: z.enum(Object.keys(SPLITS) as [Split, ...Split[]]).default('member'),
  key: id,
  member: id,
  model: id,
  group: id,
  app: id,
  env: id,
  /** The call log's endpoint, as logged (`messages`, `POST /v1/files`, …). */
  endpoint: id,
  /** The operator's read-only look at one account. */
  account: id,
  status: z
    .union([
      z.enum(['ok', 'error']),
      z.string().regex(/^[1-5]\d\d$/, "must be 'ok', 'error' or an HTTP status"),
    ])
    .optional(),
});

export type ViewState = z.infer<typeof State>;
export const FILTERS = ['key', 'member', 'model', 'group', 'app', 'env', 'endpoint', 'status'] as const;
const KEPT = ['period', 'from', 'to', 'split', ...FILTERS, 'account'] as const;

export function parseState(query: Record<string, string>): ViewState {
  const known = Object.fromEntries(KEPT.filter((k) => query[k]).map((k) => [k, query[k]]));
  const state = parseOr400(State, known);
  if (state.period === 'custom' && (!state.from || !state.to)) {
    throw new GatewayError('invalid_request_error', 'from, to: a custom period needs both dates.');
  }
  return state;
}

/** The URL query of a state (with overrides; `undefined` drops a field), defaults left out. */
export function queryOf(
  state: ViewState,
  overrides: Partial<Record<keyof ViewState, string | undefined>> = {},
): string {
  const merged: Record<string, string | undefined> = { ...state, ...overrides };
  if (merged.period !== 'custom') {
    delete merged.from;
    delete merged.to;
  }
  const params = new URLSearchParams();
  for (const k of KEPT) {
    const v = merged[k];
    if (v && !(k === 'period' && v === '7d') && !(k === 'split' && v === 'member')) params.set(k, v);
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

export interface Range {
  from: Date;
  /** Exclusive. */
  to: Date;
  /** Each local day of the range, `YYYY-MM-DD`. */
  days: string[];
  label: string;
  /** The account's reporting time zone: days start at its midnight, as the API's day buckets do. */
  zone: string;
}

/** The period as a range of whole local days in the reporting zone. */
export function rangeOf(state: ViewState, now: number, zone: string = UTC): Range {
  const today = startOfDay(zone, now);
  const tomorrow = nextDayStart(zone, today);
  const thisMonth = monthStart(zone, now);
  const bounds: Record<Period, () => [number, number]> = {
    today: () => [today, tomorrow],
    '7d': () => [shiftDays(zone, today, -6), tomorrow],
    '30d': () => [shiftDays(zone, today, -29), tomorrow],
    month: () => [thisMonth, tomorrow],
    'last-month': () => [monthStart(zone, now, -1), thisMonth],
    custom: () => [dayStart(zone, state.from!), nextDayStart(zone, dayStart(zone, state.to!))],
  };
  const [from, to] = bounds[state.period]();
  if (!(to > from)) throw new GatewayError('invalid_request_error', 'to: must be on or after from.');
  if (to - from > MAX_DAYS * DAY)
    throw new GatewayError('invalid_request_error', `to: a period covers at most ${MAX_DAYS} days.`);
  const days: string[] = [];
  for (let t = from; t < to; t = nextDayStart(zone, t)) days.push(localDate(zone, t));
  const label = days.length === 1 ? days[0]! : `${days[0]} to ${days.at(-1)}`;
  return { from: new Date(from), to: new Date(to), days, label, zone };
}
