import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { Lane, rng } from './team-session';

/** One team member as the client sees it: who they are, and the key (or provider key) it sends. */
export interface TeamMember {
  index: number;
  id: string;
  headers: Record<string, string>;
}

export interface TrafficPlan {
  model: string;
  maxTokens: number;
  /** A run's tag: the emulator's prompt cache tells one run's prefixes from another's. */
  tag: string;
  seed: number;
  /** Real think time (10–60 s) and generation time are multiplied by this. */
  timeScale: number;
  /** No new turn is begun after this (performance.now() ms). */
  deadline: number;
  /** Turns per member (the floor replays the gateway run's), no cap when absent. */
  turns?: Map<string, number>;
}

export interface CallTiming {
  status: number;
  ttfbMs: number;
  totalMs: number;
  bytes: number;
}

export interface MemberRun {
  turns: number;
  calls: CallTiming[];
  /** Why the member stopped: the deadline, its turns, or the refusal's error type and message. */
  stoppedBy: string;
}

const client = new Agent({ connections: null, keepAliveTimeout: 30_000, bodyTimeout: 0, headersTimeout: 0 });
const wait = (ms: number) => new Promise((done) => setTimeout(done, ms));
const LANES = 5;

/** Sends one streaming call and reads the whole answer; a refusal's error body is returned as well. */
async function send(url: string, headers: Record<string, string>, body: string) {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers, body, dispatcher: client });
  const ttfbMs = performance.now() - t0;
  const chunks: Buffer[] = [];
  for await (const chunk of res.body as AsyncIterable<Buffer>) if (res.statusCode !== 200) chunks.push(chunk);
  const timing = {
    status: res.statusCode,
    ttfbMs,
    totalMs: performance.now() - t0,
    bytes: Buffer.byteLength(body),
  };
  const error =
    res.statusCode === 200
      ? null
      : (JSON.parse(Buffer.concat(chunks).toString() || '{}').error as { type: string; message: string });
  return { timing, error, retryAfter: Number(res.headers['retry-after'] ?? 0) };
}

/**
 * One member's day of Claude Code: sessions on five lanes (the main agent and four subagents), each
 * turn one to five of them in parallel, think time between turns. A refusal that waiting does not
 * cure (a spend limit) ends the member's day, as it ends a Claude Code user's; a rate limit's 429 is
 * waited out as Claude Code does (for its retry-after, scaled).
 */
export async function runMember(url: string, m: TeamMember, plan: TrafficPlan): Promise<MemberRun> {
  const r = rng(plan.seed * 1000 + m.index);
  const lanes = Array.from(
    { length: LANES },
    (_, i) =>
      new Lane({
        model: plan.model,
        maxTokens: plan.maxTokens,
        growth: 1.09 + r() * 0.04,
        finalBytes: (150 + Math.floor(r() * 450)) * 1024,
        tag: `${plan.tag}-m${m.index}-l${i}`,
      }),
  );
  const run: MemberRun = { turns: 0, calls: [], stoppedBy: 'deadline' };
  const cap = plan.turns?.get(m.id) ?? Number.POSITIVE_INFINITY;
  // Members start a little apart, as a team's day does.
  await wait(r() * 2_000 * plan.timeScale * 100);
  while (performance.now() < plan.deadline) {
    if (run.turns >= cap) {
      run.stoppedBy = 'turns';
      break;
    }
    run.turns++;
    const fanOut = 1 + Math.floor(r() * LANES);
    const output = 200 + Math.floor(r() * 1300);
    // Generation at about 50 tokens a second, in 20 deltas, scaled like the think time.
    const intervalMs = Math.max(1, Math.round(((output / 50) * 1000 * plan.timeScale) / 20));
    const headers = {
      ...m.headers,
      'x-emulator-scenario': 'paced',
      'x-emulator-deltas': '20',
      'x-emulator-interval-ms': String(intervalMs),
      'x-emulator-output-tokens': String(output),
    };
    const answers = await Promise.all(lanes.slice(0, fanOut).map((lane) => send(url, headers, lane.next())));
    for (const a of answers) run.calls.push(a.timing);
    const final = answers.find(
      (a) => a.error && a.error.type !== 'rate_limit_error' && a.error.type !== 'overloaded_error',
    );
    if (final) {
      run.stoppedBy = `${final.timing.status} ${final.error!.type}: ${final.error!.message}`;
      break;
    }
    const retryAfter = Math.max(0, ...answers.map((a) => a.retryAfter));
    await wait((10_000 + r() * 50_000) * plan.timeScale + retryAfter * 1000 * plan.timeScale);
  }
  return run;
}

export async function runTeam(url: string, members: TeamMember[], plan: TrafficPlan) {
  const runs = await Promise.all(members.map((m) => runMember(url, m, plan)));
  return new Map(members.map((m, i) => [m.id, runs[i]!]));
}

export function closeTeamClient(): Promise<void> {
  return client.close();
}
