import { CliError, EXIT, type Json } from './backend';
import { enc, str, type Command } from './command';
import { listAll } from './lookup';
import { didYouMean } from './suggest';
import { table } from './output';
import { DIMENSIONS, usageRows, type Dimension, type UsageRow } from './usage-rows';
import { parseRange } from './when';

const ACCOUNT_BY: Dimension[] = ['key', 'member', 'day', 'model', 'group', 'app', 'environment'];
const ALL_ACCOUNTS_BY: Dimension[] = ['account', 'model', 'day'];

function dimensions(value: string | undefined, account: string | undefined, usage: string): Dimension[] {
  const by = (value ?? (account ? 'day' : 'account')).split(',').map((d) => d.trim());
  const allowed = account ? ACCOUNT_BY : ALL_ACCOUNTS_BY;
  const bad = by.find((d) => !(allowed as string[]).includes(d));
  if (bad !== undefined || by.length > 2 || new Set(by).size !== by.length) {
    const hint = account ? '' : ' (key, member, group, app and environment need --account)';
    const guess = bad === undefined ? '' : didYouMean(bad, allowed);
    throw new CliError(
      `--by: expected one or two of ${allowed.join(', ')}, comma-separated${hint}; got '${value}'.${guess}\n\n${usage}`,
      EXIT.usage,
    );
  }
  return by as Dimension[];
}

const humanRow = (by: Dimension[], r: UsageRow) => ({
  ...Object.fromEntries(
    by.flatMap((d) =>
      [DIMENSIONS[d].field, DIMENSIONS[d].label].filter((c) => c !== null).map((c) => [c, r[c!]]),
    ),
  ),
  requests: r.requests,
  live: r.live_requests,
  test: r.test_requests,
  errors: r.errors,
  error_rate: r.requests ? `${((100 * r.errors) / r.requests).toFixed(1)}%` : null,
  input: r.uncached_input_tokens,
  cache_write_5m: r.cache_creation.ephemeral_5m_input_tokens,
  cache_write_1h: r.cache_creation.ephemeral_1h_input_tokens,
  cache_read: r.cache_read_input_tokens,
  output: r.output_tokens,
  cost_usd: r.cost_usd.toFixed(4),
});

/** The API's messages name its query fields; the user typed the CLI's flags. */
const inFlags = (message: string) =>
  message.replace(/\bstarting_at\b/g, '--since').replace(/\bending_at\b/g, '--until');

export const usageCommand: Command = {
  summary: 'Usage and cost by one or two of key, member, day, model, group, app, environment',
  usage: `Usage: keygate usage --account ID [--by DIM[,DIM]] [--since WHEN] [--until WHEN] [--json]
       keygate usage [--by account|model|day[,…]] [--since WHEN] [--until WHEN] [--json]   (every account)

  --by DIM[,DIM]  one or two of key, member, day, model, group, app, environment (default: day);
                  across accounts: account, model, day (default: account). Example: --by member,day
  --since WHEN    today, yesterday, 7d (7 days ago), 12h, a date (2026-11-01) or an RFC 3339
                  timestamp; default: the start of this month (UTC)
  --until WHEN    the same; a day (today, a date) counts whole; default: now

Reads the rollups, so the range widens to whole hours (whole days when both ends are dates).
Columns: requests (every call), of which live and test (test keys are answered by the built-in
emulator), errors (the calls among them that ended in an error), error_rate (errors / requests),
the provider's token counts, and cost_usd: estimated at list prices, live keys only.
With --json: an array of rows with the provider's usage-report field names (uncached_input_tokens,
cache_creation.ephemeral_5m_input_tokens, …), requests, errors, live_requests, test_requests, cost_usd.`,
  options: {
    account: { type: 'string' },
    by: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
  },
  async call(values, backend) {
    const account = str(values.account);
    const by = dimensions(str(values.by), account, this.usage);
    const range = parseRange(str(values.since), str(values.until), Date.now());
    let accounts: { id: string; name: string }[];
    let rows: UsageRow[];
    try {
      accounts = account
        ? [await backend.request('GET', `/accounts/${enc(account)}`)].map((a: Json) => ({
            id: a.id,
            name: a.name,
          }))
        : (await listAll(backend, '/accounts')).map((a) => ({ id: a.id, name: a.name }));
      rows = await usageRows(backend, accounts, by, range);
    } catch (err) {
      if (err instanceof CliError) throw new CliError(inFlags(err.message), err.exitCode);
      throw err;
    }
    const span = `${range.from.toISOString()} to ${range.to?.toISOString() ?? 'now'}`;
    const title = `Usage ${account ? `of ${account}` : 'of all accounts'} by ${by.join(' and ')}, ${span}`;
    const total = rows.reduce((sum, r) => sum + r.cost_usd, 0);
    return {
      json: rows,
      text: `${title}\n${table(rows.map((r) => humanRow(by, r)))}\n\nEstimated cost (live keys): ${total.toFixed(4)} USD`,
    };
  },
};
