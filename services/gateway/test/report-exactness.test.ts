import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dailySplit, groupLines, usageBy, usageByDay, type ReportScope } from '../src/dashboard/data';
import type { AccountViewer, DashboardDeps } from '../src/dashboard/env';
import { parseState, rangeOf } from '../src/dashboard/view-state';
import type { CallRecord } from '../src/lib/call-record';
import {
  aggregate,
  bucketOf,
  costItems,
  counts,
  FIELD,
  localDay,
  type Dim,
  type Figures,
} from './exactness-expect';
import { RANGE, seedExactness, type ExactnessFixture } from './exactness-seed';
import { api, startStack, type Stack } from './harness';

let stack: Stack;
let f: ExactnessFixture;
const HOUR = 3_600_000;
const ZONES = ['UTC', 'America/New_York', 'Asia/Tokyo'] as const;
const GROUPINGS: Dim[][] = [
  [],
  ['api_key_id'],
  ['user_id'],
  ['model'],
  ['group_id'],
  ['app'],
  ['environment'],
  ['api_key_id', 'model'],
  ['user_id', 'group_id'],
];
const WIDTHS = { '1d': 31, '1h': 168, '1m': 1440 } as const;
const RANGE_QUERY = `starting_at=${new Date(RANGE.from).toISOString()}&ending_at=${new Date(RANGE.to).toISOString()}`;

const get = async (path: string) => {
  const res = await api(stack.gateway.url, path, { key: f.acct.adminKey });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const messages = () => f.records.filter((r) => r.endpoint === 'messages');
const live = (r: CallRecord) => f.keyKinds.get(r.keyId!) !== 'test';
const figuresOf = (r: Figures): Figures => ({
  uncached_input_tokens: r.uncached_input_tokens,
  cache_creation: r.cache_creation,
  cache_read_input_tokens: r.cache_read_input_tokens,
  output_tokens: r.output_tokens,
  server_tool_use: r.server_tool_use,
  requests: r.requests,
  errors: r.errors,
});

/** Every bucket of a report, page after page. */
async function allBuckets(
  path: string,
): Promise<{ starting_at: string; ending_at: string; results: any[] }[]> {
  const out = [];
  let page: string | null = null;
  do {
    const body = await get(`${path}${page ? `&page=${page}` : ''}`);
    out.push(...body.data);
    page = body.next_page;
  } while (page);
  return out;
}

/** Buckets follow one another, and a day bucket is exactly one local day: 23 hours on the day clocks spring forward. */
function checkDayBuckets(buckets: { starting_at: string; ending_at: string }[], zone: string) {
  buckets.forEach((b, i) => {
    const [start, end] = [Date.parse(b.starting_at), Date.parse(b.ending_at)];
    expect(localDay(zone, start - 1000)).not.toBe(localDay(zone, start));
    expect(localDay(zone, end - 1000)).toBe(localDay(zone, start));
    expect(localDay(zone, end)).not.toBe(localDay(zone, start));
    if (i > 0) expect(b.starting_at).toBe(buckets[i - 1]!.ending_at);
    if (zone === 'America/New_York' && localDay(zone, start) === '2025-03-09')
      expect(end - start).toBe(23 * HOUR);
  });
  if (zone === 'America/New_York')
    expect(buckets.map((b) => localDay(zone, Date.parse(b.starting_at)))).toContain('2025-03-09');
}

const bucketKey = (width: string, zone: string, startingAt: string) =>
  width === '1d' ? localDay(zone, Date.parse(startingAt)) : new Date(Date.parse(startingAt)).toISOString();

beforeAll(async () => {
  stack = await startStack();
  f = await seedExactness(stack);
}, 120_000);
afterAll(() => stack?.close());

describe.each(ZONES)('every report equals a direct aggregation of the call records, in %s', (zone) => {
  beforeAll(async () => {
    const res = await api(stack.gateway.url, '/v1/organizations/me', {
      key: f.acct.adminKey,
      body: { time_zone: zone },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.time_zone).toBe(zone);
  });

  it.each(Object.keys(WIDTHS) as (keyof typeof WIDTHS)[])(
    'usage_report/messages with %s buckets, for each group_by',
    async (width) => {
      for (const dims of GROUPINGS) {
        const groupBy = dims.map((d) => `&group_by[]=${d}`).join('');
        const buckets = await allBuckets(
          `/v1/organizations/usage_report/messages?${RANGE_QUERY}&bucket_width=${width}&limit=${WIDTHS[width]}${groupBy}`,
        );
        if (width === '1d') checkDayBuckets(buckets, zone);
        const actual = new Map<string, Figures>();
        for (const b of buckets) {
          for (const r of b.results)
            actual.set(
              `${bucketKey(width, zone, b.starting_at)}|${JSON.stringify(dims.map((d) => r[d]))}`,
              figuresOf(r),
            );
        }
        const expected = aggregate(
          messages(),
          (r) =>
            `${bucketOf(width, zone, r.createdAt.getTime())}|${JSON.stringify(dims.map((d) => FIELD[d](r)))}`,
        );
        expect(Object.fromEntries(actual), `${width} by [${dims}]`).toEqual(Object.fromEntries(expected));
      }
    },
  );

  it('cost_report by day, for each group_by (live keys only, USD; the plan charge is on billing)', async () => {
    const costDims = {
      api_key_id: FIELD.api_key_id,
      user_id: FIELD.user_id,
      group_id: FIELD.group_id,
      model: FIELD.model,
    } as const;
    for (const dims of [
      [],
      ['description'],
      ['api_key_id'],
      ['user_id'],
      ['group_id'],
      ['model'],
      ['description', 'user_id'],
    ] as string[][]) {
      const buckets = await allBuckets(
        `/v1/organizations/cost_report?${RANGE_QUERY}&limit=31${dims.map((d) => `&group_by[]=${d}`).join('')}`,
      );
      checkDayBuckets(buckets, zone);
      const actual = new Map<string, number>();
      for (const b of buckets) {
        for (const item of b.results) {
          expect(item.currency).toBe('USD');
          const parts = dims.flatMap((d) =>
            d === 'description' ? [item.cost_type, item.token_type, item.model] : [item[d]],
          );
          const k = `${localDay(zone, Date.parse(b.starting_at))}|${JSON.stringify(parts)}`;
          expect(actual.has(k), `one item per key: ${k}`).toBe(false);
          actual.set(k, Number(item.amount));
        }
      }
      const expected = new Map<string, number>();
      for (const r of messages().filter(live)) {
        for (const c of costItems(r)) {
          const parts = dims.flatMap((d) =>
            d === 'description'
              ? [c.costType, c.tokenType, r.model]
              : [costDims[d as keyof typeof costDims](r)],
          );
          const k = `${localDay(zone, r.createdAt.getTime())}|${JSON.stringify(parts)}`;
          expected.set(k, (expected.get(k) ?? 0) + c.cents);
        }
      }
      expect([...actual.keys()].sort(), `cost by [${dims}]`).toEqual([...expected.keys()].sort());
      for (const [k, cents] of expected) expect(Math.abs(actual.get(k)! - cents), k).toBeLessThan(2e-6);
    }
  });

  it('usage_summary by each dimension and by day', async () => {
    const BY = {
      key: 'api_key_id',
      member: 'user_id',
      model: 'model',
      group: 'group_id',
      app: 'app',
      environment: 'environment',
      day: 'day',
    } as const;
    for (const [by, field] of Object.entries(BY)) {
      const body = await get(`/v1/organizations/usage_summary?by=${by}&${RANGE_QUERY}`);
      expect(body.time_zone).toBe(zone);
      const actual = Object.fromEntries(body.data.map((row: any) => [String(row[field]), figuresOf(row)]));
      const expected = aggregate(messages(), (r) =>
        String(field === 'day' ? localDay(zone, r.createdAt.getTime()) : FIELD[field](r)),
      );
      expect(actual, `summary by ${by}`).toEqual(Object.fromEntries(expected));
    }
  });

  it("the dashboard's tables (overview, members, keys, groups, models, per day) through their data functions", async () => {
    const days = ['2025-03-06', '2025-03-07', '2025-03-08', '2025-03-09', '2025-03-10', '2025-03-11'];
    const deps = {
      ...stack.deps,
      resolver: undefined as never,
      operatorToken: null,
      billing: undefined as never,
    } as DashboardDeps;
    const range = rangeOf(
      parseState({ period: 'custom', from: days[0]!, to: days.at(-1)! }),
      Date.now(),
      zone,
    );
    expect(range.days).toEqual(days);
    const admin: AccountViewer = {
      kind: 'admin',
      accountId: f.acct.id,
      keyId: f.acct.adminKeyId,
      memberId: null,
      csrf: 'x',
    };
    const scopeOf = (viewer: AccountViewer): ReportScope => ({ deps, viewer, range, state: parseState({}) });
    const inRange = (r: CallRecord) =>
      r.endpoint === 'messages' && days.includes(localDay(zone, r.createdAt.getTime()));
    const cost = (rs: CallRecord[]) =>
      rs.filter(live).reduce((t, r) => t + costItems(r).reduce((s, c) => s + c.cents, 0), 0);
    const ann = f.memberIds[0]!;

    for (const [viewer, mine] of [
      [admin, (r: CallRecord) => inRange(r)],
      [
        { kind: 'member', accountId: f.acct.id, keyId: 'k', memberId: ann, csrf: 'x' } as AccountViewer,
        (r: CallRecord) => inRange(r) && r.memberId === ann,
      ],
    ] as const) {
      const records = f.records.filter(mine);
      const scope = scopeOf(viewer);
      for (const by of ['member', 'key', 'model', 'group', 'day'] as const) {
        const keyOf =
          by === 'day'
            ? (r: CallRecord) => localDay(zone, r.createdAt.getTime())
            : (r: CallRecord) =>
                FIELD[
                  ({ member: 'user_id', key: 'api_key_id', model: 'model', group: 'group_id' } as const)[by]
                ](r);
        const lines = await usageBy(scope, by);
        expect(
          Object.fromEntries(lines.map((l) => [String(l.id), l.figures])),
          `${viewer.kind} by ${by}`,
        ).toEqual(Object.fromEntries(aggregate(records, (r) => String(keyOf(r)))));
        for (const l of lines)
          expect(
            Math.abs(l.costCents - cost(records.filter((r) => String(keyOf(r)) === String(l.id)))),
          ).toBeLessThan(1e-5);
      }
      const perDay = await usageByDay(scope);
      expect(perDay.map((l) => l.id)).toEqual(days);
      const byDay = aggregate(records, (r) => localDay(zone, r.createdAt.getTime()));
      for (const l of perDay) expect(l.figures.requests).toBe(byDay.get(l.id!)?.requests ?? 0);

      const split = await dailySplit(scope, 'model');
      const tokens = new Map<string, number>();
      for (const r of records) {
        const c = counts(r);
        const k = `${localDay(zone, r.createdAt.getTime())}|${r.model}`;
        tokens.set(k, (tokens.get(k) ?? 0) + c.input + c.output + c.c5m + c.c1h + c.read);
      }
      expect(Object.fromEntries([...split.tokens].filter(([, v]) => v > 0))).toEqual(
        Object.fromEntries([...tokens].filter(([, v]) => v > 0)),
      );

      const groups = await groupLines(scope);
      const expectedGroups = new Map<string, { requests: number; retries: number; wasted: number }>();
      for (const r of records.filter((r) => r.groupId)) {
        const g = expectedGroups.get(r.groupId!) ?? { requests: 0, retries: 0, wasted: 0 };
        g.requests += 1;
        g.retries += r.retryCount;
        if (counts(r).error) g.wasted += r.retryCount;
        expectedGroups.set(r.groupId!, g);
      }
      expect(
        Object.fromEntries(
          groups.map((g) => [g.id, { requests: g.figures.requests, retries: g.retries, wasted: g.wasted }]),
        ),
      ).toEqual(Object.fromEntries(expectedGroups));

      const trouble = await stack.gateway.store.dashboard.trouble(
        f.acct.id,
        range.from,
        range.to,
        viewer.kind === 'member' ? viewer.memberId : null,
      );
      const expectedTrouble = new Map<string, { calls: number; retried: number; retries: number }>();
      for (const r of records.filter((r) => counts(r).error || r.retryCount > 0)) {
        const t = expectedTrouble.get(String(r.errorType)) ?? { calls: 0, retried: 0, retries: 0 };
        t.calls += 1;
        t.retried += r.retryCount > 0 ? 1 : 0;
        t.retries += r.retryCount;
        expectedTrouble.set(String(r.errorType), t);
      }
      expect(
        Object.fromEntries(
          trouble.map((t) => [
            String(t.errorType),
            { calls: t.calls, retried: t.retried, retries: t.retries },
          ]),
        ),
      ).toEqual(Object.fromEntries(expectedTrouble));
    }
  });
});

describe('the reporting time zone setting', () => {
  const post = (body: object) =>
    api(stack.gateway.url, '/v1/organizations/me', { key: f.acct.adminKey, body });

  it('refuses unknown names and zones that are not whole hours from UTC, naming why', async () => {
    const unknown = await post({ time_zone: 'Mars/Olympus_Mons' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/not an IANA time zone/);
    const kolkata = await post({ time_zone: 'Asia/Kolkata' });
    expect(kolkata.status).toBe(400);
    expect(kolkata.body.error.message).toMatch(/\+5:30 from UTC.*whole number of hours/);
    const extra = await post({ time_zone: 'UTC', week_starts_on: 'monday' });
    expect(extra.status).toBe(400);
  });

  it('is UTC until set, and is read back with the account', async () => {
    const fresh = await stack.seedAccount({ name: 'Fresh' });
    expect(
      (await api(stack.gateway.url, '/v1/organizations/me', { key: fresh.adminKey })).body,
    ).toMatchObject({ time_zone: 'UTC', members_manage_own_keys: false });
    expect((await post({ time_zone: 'europe/berlin', members_manage_own_keys: true })).body).toMatchObject({
      time_zone: 'Europe/Berlin',
      members_manage_own_keys: true,
    });
  });
});
