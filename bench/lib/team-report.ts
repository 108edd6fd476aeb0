import { Prices } from '../../services/gateway/src/pricing/prices';
import type { Sql } from '../../services/gateway/src/store/index';
import type { UsageRow } from '../../services/gateway/src/call-log/usage-queries';
import { memberOutcome, teamOutcome, type LedgerCall, type MemberLimit } from './team-ledger';
import { median } from './stats';

type CallRow = UsageRow & {
  member_id: string | null;
  status: number;
  refusal: string | null;
  created_at: Date;
  latency_ms: number;
};

/** The run's calls from the call log, priced by the gateway's bundled catalog, by member. */
export async function ledgerOf(sql: Sql, since: Date): Promise<Map<string, LedgerCall[]>> {
  const bundled = new Prices();
  const rows = await sql<CallRow[]>`
    select member_id, model, status, refusal, created_at, latency_ms, input_tokens, output_tokens,
           cache_read_input_tokens, cache_creation_5m_tokens, cache_creation_1h_tokens,
           web_search_requests, speed, inference_geo, batch, created_at as price_day
    from calls where created_at >= ${since} and endpoint = 'messages'`;
  const out = new Map<string, LedgerCall[]>();
  for (const r of rows) {
    if (!r.member_id) continue;
    const startMs = r.created_at.getTime();
    const call: LedgerCall = {
      memberId: r.member_id,
      status: r.status,
      refusal: r.refusal,
      startMs,
      endMs: startMs + r.latency_ms,
      usd: r.status < 400 ? bundled.rowCost(r).cents / 100 : 0,
      inputTokens: r.input_tokens + r.cache_creation_5m_tokens + r.cache_creation_1h_tokens,
      outputTokens: r.output_tokens,
    };
    const list = out.get(r.member_id) ?? [];
    list.push(call);
    out.set(r.member_id, list);
  }
  return out;
}

/** How the run's prompts divided: the share read from the cache, over every served call's prompt tokens. */
export async function cacheShare(sql: Sql, since: Date): Promise<number> {
  const [r] = await sql<{ read: number; prompt: number }[]>`
    select coalesce(sum(cache_read_input_tokens), 0)::float8 as read,
           coalesce(sum(input_tokens + cache_read_input_tokens + cache_creation_5m_tokens + cache_creation_1h_tokens), 0)::float8 as prompt
    from calls where created_at >= ${since} and status < 400 and endpoint = 'messages'`;
  return r!.prompt ? r!.read / r!.prompt : 0;
}

export function spendFigures(limits: MemberLimit[], ledger: Map<string, LedgerCall[]>) {
  const outcomes = limits.map((l) => memberOutcome(l, ledger.get(l.memberId) ?? []));
  return { outcomes, team: teamOutcome(outcomes) };
}

export interface TeamResults {
  startedAt: Date;
  command: string;
  machine: string;
  load: string;
  plan: string;
  calls: { gateway: number; floor: number; served: number; bodyMb: number; cacheRead: number };
  spend: ReturnType<typeof spendFigures>;
  cpuMsPerCall: { gateway: number; floor: number };
  latency: { gateway: number[]; floor: number[]; gatewayTtfb: number[]; floorTtfb: number[] };
  writes: { records: number; seconds: number; peakPerSecond: number; lagMs: number };
  pages: { name: string; path: string; first: number; runs: number[] }[];
  stoppedBy: Record<string, number>;
}

const usd = (v: number) => `$${v.toFixed(2)}`;
const ms = (v: number) => v.toFixed(1);
const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`);

export function renderTeam(r: TeamResults): string {
  const { team } = r.spend;
  // A member that never passed its limit is no "largest overshoot".
  const w = team.worstUsd?.overshootUsd ? team.worstUsd : null;
  const c = team.worstCalls?.overshootCalls ? team.worstCalls : null;
  const added = median(r.latency.gateway) - median(r.latency.floor);
  const addedTtfb = median(r.latency.gatewayTtfb) - median(r.latency.floorTtfb);
  const rows: [string, string, string][] = [
    ['calls (gateway run / floor run)', `${r.calls.gateway} / ${r.calls.floor}`, ''],
    ['calls served through the gateway', String(r.calls.served), ''],
    [
      'prompt read from the cache (call log)',
      pct(r.calls.cacheRead),
      `${(r.calls.bodyMb / 1024).toFixed(2)} GB of request bodies`,
    ],
    [
      'members who reached 95% of their limit / were refused',
      `${team.reachedLimit} / ${team.refused} of ${team.members}`,
      '',
    ],
    [
      'refusals before 95% of any limit',
      String(team.early),
      `target 0; ${team.rateRefusals} by a rate limit; lowest first spend refusal at ${pct(team.lowestFirstRefusal)} of the limit`,
    ],
    [
      'largest overshoot past a limit, $',
      w ? usd(w.overshootUsd) : '$0.00',
      w ? `${usd(w.spentUsd)} spent of ${usd(w.limitUsd)} (${w.memberId})` : 'no member spent past its limit',
    ],
    [
      'largest overshoot past a limit, calls',
      c ? `${c.overshootCalls}` : '0',
      c
        ? `with ${c.streamsAtCrossing} of its calls in flight at the crossing (target ≤ 1 per stream); ${team.beyondTarget} member(s) beyond the target`
        : `target ≤ 1 per stream in flight; ${team.beyondTarget} member(s) beyond it`,
    ],
    [
      'gateway CPU per call, ms',
      ms(r.cpuMsPerCall.gateway),
      `floor ${ms(r.cpuMsPerCall.floor)} (whole process, call log thread included)`,
    ],
    [
      'added median latency against the floor, ms',
      ms(added),
      `whole call ${ms(median(r.latency.gateway))} vs ${ms(median(r.latency.floor))}; first byte +${ms(addedTtfb)}`,
    ],
    [
      'call log write rate, records/s',
      (r.writes.records / r.writes.seconds).toFixed(1),
      `over the gateway run; peak ${r.writes.peakPerSecond.toFixed(0)}/s (counted each second); every call's record in PostgreSQL ${r.writes.lagMs <= 1_000 ? 'within a second of' : `${(r.writes.lagMs / 1000).toFixed(1)} s after`} the last answer`,
    ],
    ...r.pages.map((p): [string, string, string] => [
      `dashboard: ${p.name}, ms`,
      ms(median(p.runs)),
      `first ${ms(p.first)}, median of ${p.runs.length} (\`${p.path}\`)`,
    ]),
  ];
  const stopped = Object.entries(r.stoppedBy)
    .map(([why, n]) => `${n} × ${why}`)
    .join('; ');
  return `<!-- claude-code-team -->
## A Claude Code team, simulated (\`pnpm bench:team\`)

${r.startedAt.toISOString()}, \`${r.command}\`. ${r.machine} ${r.load}

${r.plan}

| figure | value | notes |
|---|---:|---|
${rows.map(([a, b, n]) => `| ${a} | ${b} | ${n} |`).join('\n')}

How the members' days ended: ${stopped}.
<!-- /claude-code-team -->
`;
}
