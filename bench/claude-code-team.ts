/**
 * A Claude Code team, simulated (issue 30 item 6): `pnpm bench:team`.
 *
 * 50 members of a team-plan account, each with a default key (the plan's limits) and a monthly
 * spend limit of $5–$20 of which 50–80% is already spent this month, run Claude Code's traffic
 * through the compiled gateway (real PostgreSQL, the emulator as the provider): sessions that grow
 * from about 20 KB to 150–600 KB, one to five parallel subagents a turn, about 90% of each prompt
 * read from the cache, streaming, think time between turns. Time is scaled (TEAM_TIME_SCALE,
 * 0.01: a 10–60 s think is 100–600 ms; generation at 50 tokens/s likewise). The same traffic then
 * runs through the floor proxy. Spend, refusals and overshoot are read from the call log.
 *
 * TEAM_MEMBERS (50), TEAM_MINUTES (5, the gateway run's longest), TEAM_TIME_SCALE (0.01),
 * TEAM_SPENT (0.5-0.8, the share of each limit spent before the run: higher on a loaded machine,
 * where fewer calls are made, so that every member still reaches its limit),
 * TEAM_OUT=path writes the section there instead of bench/RESULTS.md.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createStore } from '../services/gateway/src/stores';
import { openDatabase, type Sql } from '../services/gateway/src/store/index';
import { callAt } from '../services/gateway/test/kit/call-records';
import { dashboardSession } from '../services/gateway/test/dashboard-http';
import { DATABASE_URL, spawnArm, upstreamArm, type Arm } from './lib/arms';
import { writeResultsSection } from './lib/results-section';
import { cacheShare, ledgerOf, renderTeam, spendFigures, type TeamResults } from './lib/team-report';
import type { MemberLimit } from './lib/team-ledger';
import {
  closeTeamClient,
  runTeam,
  type MemberRun,
  type TeamMember,
  type TrafficPlan,
} from './lib/team-traffic';

const MEMBERS = Number(process.env.TEAM_MEMBERS ?? 50);
const MINUTES = Number(process.env.TEAM_MINUTES ?? 5);
const SCALE = Number(process.env.TEAM_TIME_SCALE ?? 0.01);
/** The share of each member's limit spent before the run, from–to (spread over the members). */
const [SPENT_LO, SPENT_HI] = (process.env.TEAM_SPENT ?? '0.5-0.8').split('-').map(Number) as [number, number];
const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const MODEL = 'claude-opus-5-5';
const SEED = 30;
const startedAt = new Date();
const running: Arm[] = [];

const { emulator, env } = await upstreamArm(PROVIDER_KEY, DATABASE_URL);
running.push(emulator);
try {
  const [gateway, floor] = await Promise.all([
    spawnArm('gateway', 'bench/servers/gateway.ts', { ...env, BENCH_ADMIN: '1' }),
    spawnArm('floor', 'bench/servers/floor.ts', env),
  ]);
  running.push(gateway!, floor!);
  const adminKey = String(gateway!.info.adminKey);
  const db = await openDatabase({
    url: DATABASE_URL,
    dataDir: '',
    schema: String(gateway!.info.schema),
    max: 2,
  });
  const store = createStore(db);
  try {
    console.log(`setting up ${MEMBERS} members…`);
    const { members, limits } = await setUpTeam(gateway!.url, adminKey, store);
    const since = new Date(Date.now() - 1_000);

    console.log(`the team through the gateway (at most ${MINUTES} minutes)…`);
    const plan = (tag: string): TrafficPlan => ({
      model: MODEL,
      maxTokens: 128_000,
      tag,
      seed: SEED,
      timeScale: SCALE,
      deadline: performance.now() + MINUTES * 60_000,
    });
    const writes = sampleWrites(db.sql);
    let cpu0 = gateway!.cpuMs();
    const gw = await runTeam(`${gateway!.url}/v1/messages?beta=true`, members, plan('gw'));
    const lastAnswer = Date.now();
    const gatewayCpu = gateway!.cpuMs() - cpu0;
    const written = await writes.stop(countOf(gw));
    const gwCalls = countOf(gw);

    console.log('the same traffic through the floor…');
    const turns = new Map([...gw].map(([id, run]) => [id, run.turns]));
    const provider = { 'x-api-key': PROVIDER_KEY };
    cpu0 = floor!.cpuMs();
    const fl = await runTeam(
      `${floor!.url}/v1/messages?beta=true`,
      members.map((m) => {
        const { authorization: _, ...headers } = m.headers;
        return { ...m, headers: { ...headers, ...provider } };
      }),
      { ...plan('fl'), deadline: Number.POSITIVE_INFINITY, turns },
    );
    const floorCpu = floor!.cpuMs() - cpu0;

    console.log('reading the call log and timing the dashboard…');
    const ledger = await ledgerOf(db.sql, since);
    const results: TeamResults = {
      startedAt,
      command: `pnpm bench:team${MEMBERS !== 50 || MINUTES !== 5 || SCALE !== 0.01 || process.env.TEAM_SPENT ? ` (TEAM_MEMBERS=${MEMBERS} TEAM_MINUTES=${MINUTES} TEAM_TIME_SCALE=${SCALE} TEAM_SPENT=${SPENT_LO}-${SPENT_HI})` : ''}`,
      machine: `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GB, Node ${process.version}.`,
      load: `Load average at the start ${loadavg()[0]!.toFixed(1)}: ${process.env.TEAM_MACHINE_NOTE ?? 'a machine shared with other work; latency and CPU figures are to be rerun on a quiet one.'}`,
      plan: `${MEMBERS} members on the team plan, each with one default key (the plan's limits) and a monthly spend limit of $5–$20 (${Math.round(SPENT_LO * 100)}–${Math.round(SPENT_HI * 100)}% of it spent before the run); ${MODEL}, max_tokens 128000, streaming; sessions of 5 lanes (main agent and subagents) growing from about 20 KB by 9–13% a call to 150–600 KB, 1–5 lanes in parallel a turn; think time 10–60 s and generation at 50 tokens/s, both × ${SCALE}. A member's day ends at a spend-limit refusal or after ${MINUTES} minutes; the floor run replays each member's turns.`,
      calls: {
        gateway: gwCalls,
        floor: countOf(fl),
        served: [...gw.values()].reduce((n, r) => n + r.calls.filter((c) => c.status === 200).length, 0),
        bodyMb: [...gw.values()].reduce((n, r) => n + r.calls.reduce((b, c) => b + c.bytes, 0), 0) / 2 ** 20,
        cacheRead: await cacheShare(db.sql, since),
      },
      spend: spendFigures(limits, ledger),
      cpuMsPerCall: { gateway: gatewayCpu / gwCalls, floor: floorCpu / countOf(fl) },
      latency: {
        gateway: servedTimings(gw, 'totalMs'),
        floor: servedTimings(fl, 'totalMs'),
        gatewayTtfb: servedTimings(gw, 'ttfbMs'),
        floorTtfb: servedTimings(fl, 'ttfbMs'),
      },
      writes: { ...written, lagMs: written.lastAt - lastAnswer },
      pages: await timePages(gateway!.url, adminKey, members[0]!.id),
      stoppedBy: tally([...gw.values()].map((r) => r.stoppedBy.split(':')[0]!)),
    };
    for (const o of results.spend.outcomes)
      console.log(
        `${o.memberId}: limit $${o.limitUsd}, spent $${o.spentUsd.toFixed(2)}, first refusal at ${o.firstRefusalAt === null ? '–' : (o.firstRefusalAt * 100).toFixed(1)}%, ${gw.get(o.memberId)!.stoppedBy}`,
      );
    const section = renderTeam(results);
    if (process.env.TEAM_OUT) writeFileSync(process.env.TEAM_OUT, section);
    else writeResultsSection('claude-code-team', section);
    console.log(section);
  } finally {
    await store.close();
  }
} finally {
  for (const a of running.splice(0).reverse()) await a.close();
  await closeTeamClient();
}

/** Members, their default keys, the spend already on their month, and their spend limits, set up as a lead would (the account API). */
async function setUpTeam(base: string, adminKey: string, store: ReturnType<typeof createStore>) {
  const admin = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/v1/organizations${path}`, {
      method: 'POST',
      headers: { 'x-api-key': adminKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as { id: string; key?: string };
  };
  const members: TeamMember[] = [];
  const limits: MemberLimit[] = [];
  const [account] = await store.db.sql<{ id: string }[]>`select id from accounts limit 1`;
  for (let i = 0; i < MEMBERS; i++) {
    const m = await admin('/users', { email: `dev${i}@team.example` });
    const k = await admin('/api_keys', { member_id: m.id });
    const limitUsd = 5 + Math.round((15 * i) / Math.max(1, MEMBERS - 1));
    const share = SPENT_LO + ((SPENT_HI - SPENT_LO) * ((i * 7) % 10)) / 9;
    const seededUsd = Math.round(limitUsd * share * 100) / 100;
    // Spend this month before the run: Opus 5.5 output at $20 per million tokens, an hour ago.
    await store.calls.insertBatch([
      callAt(account!.id, new Date(Date.now() - 3_600_000).toISOString(), {
        keyId: k.id,
        memberId: m.id,
        model: MODEL,
        usage: { input_tokens: 0, output_tokens: Math.round((seededUsd / 20) * 1e6) },
      }),
    ]);
    await admin('/spend_limits', {
      scope: { type: 'user', user_id: m.id },
      amount: String(limitUsd * 100),
      period: 'monthly',
    });
    const [lim] = await store.db.sql<{ rpm: number | null; itpm: number | null; otpm: number | null }[]>`
      select limit_rpm as rpm, limit_itpm as itpm, limit_otpm as otpm from api_keys where id = ${k.id}`;
    members.push({
      index: i,
      id: m.id,
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
        'user-agent': 'claude-cli/2.1.330 (external, cli)',
        authorization: `Bearer ${k.key}`,
      },
    });
    limits.push({ memberId: m.id, limitUsd, seededUsd, ...lim! });
  }
  return { members, limits };
}

/** Counts the call log's rows each second while the team runs; `stop` waits for `expected` rows. */
function sampleWrites(sql: Sql) {
  const samples: { at: number; n: number }[] = [];
  const count = async () => {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from calls where endpoint = 'messages'`;
    samples.push({ at: Date.now(), n: r!.n });
    return r!.n;
  };
  const first = count();
  const timer = setInterval(() => void count(), 1_000);
  return {
    async stop(expected: number) {
      const base = await first;
      const deadline = Date.now() + 60_000;
      while ((await count()) - base < expected && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      clearInterval(timer);
      samples.sort((a, b) => a.at - b.at);
      const last = samples.findIndex((s) => s.n - base >= expected);
      const end = samples[last >= 0 ? last : samples.length - 1]!;
      let peak = 0;
      for (let i = 1; i < samples.length; i++)
        peak = Math.max(
          peak,
          ((samples[i]!.n - samples[i - 1]!.n) * 1000) / (samples[i]!.at - samples[i - 1]!.at || 1),
        );
      return {
        records: end.n - base,
        seconds: (end.at - samples[0]!.at) / 1000,
        peakPerSecond: peak,
        lastAt: end.at,
      };
    },
  };
}

/** Each dashboard page once cold, then five times, with an admin's session, over the run's data. */
async function timePages(base: string, adminKey: string, memberId: string) {
  const session = await dashboardSession(base, adminKey);
  const pages = [
    ['overview', '/dashboard?period=today'],
    ['members', '/dashboard/members?period=today'],
    ['a member', `/dashboard/members/${memberId}?period=today`],
    ['keys', '/dashboard/keys?period=today'],
    ['call log', '/dashboard/calls?period=today'],
  ] as const;
  const out: TeamResults['pages'] = [];
  for (const [name, path] of pages) {
    const times: number[] = [];
    for (let i = 0; i < 6; i++) {
      const t0 = performance.now();
      const res = await session.get(path);
      await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      times.push(performance.now() - t0);
    }
    out.push({ name, path, first: times[0]!, runs: times.slice(1) });
  }
  return out;
}

function countOf(runs: Map<string, MemberRun>): number {
  return [...runs.values()].reduce((n, r) => n + r.calls.length, 0);
}

function servedTimings(runs: Map<string, MemberRun>, field: 'totalMs' | 'ttfbMs'): number[] {
  return [...runs.values()].flatMap((r) => r.calls.filter((c) => c.status === 200).map((c) => c[field]));
}

function tally(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
