import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { api, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';
import { metricsExport, str } from './otlp-export';

/**
 * Claude Code Opus 5.5 list prices in USD per million tokens: input 4, 5-minute cache write 5,
 * 1-hour cache write 8, cache read 0.2, output 20
 * (https://platform.claude.com/docs/en/models/opus-5-5/overview, read 2026-11-25).
 */
const OPUS_5_5 = { input: 4, w5m: 5, w1h: 8, read: 0.2, output: 20 };

/** The cost in USD of metered call rows, by hand from the published rates above. */
function usdOf(rows: Record<string, any>[]): number {
  let usd = 0;
  for (const r of rows) {
    expect(r.model, 'the emulator answers Claude Code with its default model').toBe('claude-opus-5-5');
    usd +=
      (r.input_tokens * OPUS_5_5.input +
        r.cache_creation_5m_tokens * OPUS_5_5.w5m +
        r.cache_creation_1h_tokens * OPUS_5_5.w1h +
        r.cache_read_input_tokens * OPUS_5_5.read +
        r.output_tokens * OPUS_5_5.output) /
      1e6;
  }
  return usd;
}

let stack: Stack;
let root: string;
let browser: Browser;
let admin: string;
const dev = { id: '', key: { id: '', secret: '' } };
const other = { id: '', key: { id: '', secret: '' } };
const session = randomUUID();

/** Counters a short `claude -p` run does not reach (commits, pull requests), in Claude Code's documented shape. */
const crafted = (sessionId: string, points: Parameters<typeof metricsExport>[1]) =>
  metricsExport(sessionId, points);

const sendMetrics = (key: string, body: unknown) =>
  fetch(`${stack.gateway.url}/otlp/v1/metrics`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keygate-cc-otel-'));
  stack = await startStack();
  browser = await launchBrowser();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  for (const [who, email] of [
    [dev, 'dev@otel.test'],
    [other, 'other@otel.test'],
  ] as const) {
    who.id = (
      await api(stack.gateway.url, '/v1/organizations/users', { key: admin, body: { email } })
    ).body.id;
    who.key = await stack.newKey({ kind: 'live', memberId: who.id });
  }
}, 60_000);
afterEach(killClaudeRuns);
afterAll(async () => {
  await browser?.close();
  await stack?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("real Claude Code's OpenTelemetry export through the gateway", () => {
  it('arrives over http/protobuf, is attributed to the member, joins the metered calls, and shows on the report and the page', {
    timeout: 240_000,
  }, async () => {
    const home = join(root, 'home');
    freshHome(home);
    // The emulator answers "Write …" with a call of Claude Code's Write tool (its file_path is
    // /tmp/example.txt, the emulator's plausible path); acceptEdits lets Claude Code write it, so
    // the run has an accepted edit and a line added. The file is removed first: Write refuses to
    // overwrite a file it has not read.
    rmSync('/tmp/example.txt', { force: true });
    const run = await runClaude({
      home,
      prompt: 'Write a file please',
      sessionId: session,
      args: ['--permission-mode', 'acceptEdits', '--add-dir', '/tmp'],
      env: {
        ANTHROPIC_BASE_URL: stack.gateway.url,
        ANTHROPIC_AUTH_TOKEN: dev.key.secret,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        CLAUDE_CODE_ENABLE_TELEMETRY: '1',
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_LOGS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_ENDPOINT: `${stack.gateway.url}/otlp`,
        OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${dev.key.secret}`,
        OTEL_METRIC_EXPORT_INTERVAL: '500',
        OTEL_LOGS_EXPORT_INTERVAL: '500',
      },
      blackholePort: await closedPort(),
      timeoutMs: 120_000,
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(readFileSync('/tmp/example.txt', 'utf8').length).toBeGreaterThan(0);
    rmSync('/tmp/example.txt', { force: true });

    // What Claude Code exported, as stored: its counters and events, all attributed to the member.
    const sql = stack.gateway.store.db.sql;
    const metrics = await waitFor(
      async () => {
        const rows = await sql`select * from claude_code_metrics where session_id = ${session}`;
        const names = new Set(rows.map((r) => r.metric));
        return names.has('claude_code.lines_of_code.count') &&
          names.has('claude_code.code_edit_tool.decision')
          ? rows
          : null;
      },
      { timeout: 20_000, what: "Claude Code's metrics export" },
    );
    expect(new Set(metrics.map((r) => r.member_id))).toEqual(new Set([dev.id]));
    const events =
      await sql`select * from claude_code_events where session_id = ${session} and name = 'api_request'`;
    const calls = (await stack.calls()).filter((c) => c.group_id === session && c.endpoint === 'messages');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(events.length).toBe(calls.length);
    // Each api_request event names the provider request id of one metered call of the session.
    expect(new Set(events.map((e) => e.request_id))).toEqual(
      new Set(calls.map((c) => c.upstream_request_id)),
    );
    expect(new Set(events.map((e) => e.member_id))).toEqual(new Set([dev.id]));

    // Commits and pull requests: a crafted export in the documented shape for the same session.
    expect(
      (
        await sendMetrics(
          dev.key.secret,
          crafted(session, [
            ['claude_code.commit.count', 1, []],
            ['claude_code.pull_request.count', 1, []],
          ]),
        )
      ).status,
    ).toBe(200);
    // Another member's day, from a crafted export only: lines and a rejected edit, no calls.
    expect(
      (
        await sendMetrics(
          other.key.secret,
          crafted(randomUUID(), [
            ['claude_code.session.count', 1, []],
            ['claude_code.lines_of_code.count', 7, [str('type', 'added')]],
            [
              'claude_code.code_edit_tool.decision',
              1,
              [str('tool_name', 'Edit'), str('decision', 'reject'), str('language', 'Go')],
            ],
          ]),
        )
      ).status,
    ).toBe(200);

    // usage_report/claude_code: lines, edits, commits and pull requests from the telemetry, cost from the calls.
    const day = new Date().toISOString().slice(0, 10);
    const report = await api(
      stack.gateway.url,
      `/v1/organizations/usage_report/claude_code?starting_at=${day}`,
      {
        key: admin,
      },
    );
    const mine = report.body.data.find((d: any) => d.user_id === dev.id);
    expect(mine).toMatchObject({
      actor: { type: 'user_actor', email_address: 'dev@otel.test' },
      // What Claude Code 2.1.330 names a `claude -p` run's terminal.
      terminal_type: 'non-interactive',
      core_metrics: {
        num_sessions: 1,
        lines_of_code: { added: 1, removed: 0 },
        commits_by_claude_code: 1,
        pull_requests_by_claude_code: 1,
      },
      tool_actions: { write_tool: { accepted: 1, rejected: 0 }, edit_tool: { accepted: 0, rejected: 0 } },
    });
    const metered = usdOf(calls);
    const reported = mine.model_breakdown.reduce((t: number, b: any) => t + b.estimated_cost.amount, 0) / 100;
    expect(reported).toBeCloseTo(metered, 9);
    // Claude Code's own estimate, from its api_request events, agrees with the metered cost.
    expect(events.reduce((t, e) => t + e.cost_usd, 0)).toBeCloseTo(metered, 9);
    expect(report.body.data.find((d: any) => d.user_id === other.id)).toMatchObject({
      core_metrics: { num_sessions: 1, lines_of_code: { added: 7, removed: 0 } },
      tool_actions: { edit_tool: { accepted: 0, rejected: 1 } },
      model_breakdown: [],
    });

    // The dashboard page, as the account admin: both members, the session's agent tree, the join.
    const page = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
    await signIn(page, stack.gateway.url, admin);
    await page.goto(`${stack.gateway.url}/dashboard/claude-code?period=today`);
    await screenshot(page, '40-claude-code-admin');
    expect(await accessibilityProblems(page)).toEqual([]);
    const outcomes = await tableText(page, 'outcomes');
    expect(outcomes[0]).toEqual([
      'Day',
      'Member',
      'Sessions',
      'Cost (USD)',
      'Lines added',
      'Lines removed',
      'Commits',
      'Pull requests',
      'Edits accepted',
      'Per PR (USD)',
      'Per accepted edit (USD)',
    ]);
    const cost = metered.toFixed(4);
    expect(outcomes.find((r) => r[1] === 'dev@otel.test')).toEqual([
      day,
      'dev@otel.test',
      '1',
      cost,
      '1',
      '0',
      '1',
      '1',
      '100.0% of 1',
      cost,
      cost,
    ]);
    expect(outcomes.find((r) => r[1] === 'other@otel.test')).toEqual([
      day,
      'other@otel.test',
      '1',
      '0.0000',
      '7',
      '0',
      '0',
      '0',
      '0.0% of 1',
      '—',
      '—',
    ]);
    const sessions = await tableText(page, 'sessions');
    const main = sessions.find((r) => r[2] === session && r[3] === 'main agent')!;
    expect(main[9]).toBe(`${calls.length} of ${calls.length}`);

    // As the member: only their own rows.
    const own = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
    await signIn(own, stack.gateway.url, other.key.secret);
    await own.goto(`${stack.gateway.url}/dashboard/claude-code?period=today`);
    await screenshot(own, '41-claude-code-member');
    const theirs = (await tableText(own, 'outcomes')).slice(1);
    expect(theirs.map((r) => r[1])).toEqual(['other@otel.test']);
    expect((await tableText(own, 'sessions')).some((r) => r[2] === session)).toBe(false);

    // Revoked: the member's next export is refused, in the provider's error shape.
    expect(
      (
        await api(stack.gateway.url, `/v1/organizations/api_keys/${dev.key.id}`, {
          key: admin,
          body: { status: 'inactive' },
        })
      ).status,
    ).toBe(200);
    const refused = await sendMetrics(
      dev.key.secret,
      crafted(session, [['claude_code.commit.count', 1, []]]),
    );
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });
});
