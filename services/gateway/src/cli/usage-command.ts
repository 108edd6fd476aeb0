import { CliError, EXIT, type Json } from './backend';
import { enc, str, type Command } from './command';
import { table } from './output';

const ACCOUNT_BY = ['key', 'member', 'day', 'model', 'group', 'app', 'environment'];
const ALL_ACCOUNTS_BY = ['account', 'model', 'day'];

/** The column a `--by` fills, and its label column when it has one. */
const COLUMNS: Record<string, string[]> = {
  key: ['api_key_id', 'api_key_name'],
  member: ['user_id', 'user_email'],
  day: ['day'],
  model: ['model'],
  group: ['group_id'],
  app: ['app'],
  environment: ['environment'],
  account: ['account_id', 'account_name'],
};

/** A date-only --until means the whole of that day. */
function untilParam(until: string | undefined): string | undefined {
  if (!until || !/^\d{4}-\d{2}-\d{2}$/.test(until)) return until;
  const next = new Date(`${until}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return Number.isNaN(next.getTime()) ? until : next.toISOString().slice(0, 10);
}

const humanRow = (by: string, r: Json) => ({
  ...Object.fromEntries(COLUMNS[by]!.map((c) => [c, r[c]])),
  requests: r.requests,
  errors: r.errors,
  error_rate: r.requests ? `${((100 * r.errors) / r.requests).toFixed(1)}%` : null,
  input: r.uncached_input_tokens,
  cache_write_5m: r.cache_creation.ephemeral_5m_input_tokens,
  cache_write_1h: r.cache_creation.ephemeral_1h_input_tokens,
  cache_read: r.cache_read_input_tokens,
  output: r.output_tokens,
});

export const usageCommand: Command = {
  summary: 'Usage totals by key, member, day, model or group',
  usage: `Usage: keygate usage --account ID --by key|member|day|model|group|app|environment [--since WHEN] [--until WHEN] [--json]
       keygate usage --by account|model|day [--since WHEN] [--until WHEN] [--json]      (every account)

  --since WHEN  RFC 3339 timestamp or date (default: the start of this month, UTC)
  --until WHEN  RFC 3339 timestamp (exclusive) or date (inclusive); default: now

Reads the hourly rollups, so the range widens to whole hours. With --json: an array of rows,
each with the dimension's value and the provider's usage-report fields (uncached_input_tokens,
cache_creation.ephemeral_5m_input_tokens, cache_creation.ephemeral_1h_input_tokens,
cache_read_input_tokens, output_tokens), plus requests (every call) and errors (the calls
among them that ended in an error); the table adds the error rate, errors / requests.`,
  options: { account: { type: 'string' }, by: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } },
  async call(values, backend) {
    const account = str(values.account);
    const by = str(values.by) ?? (account ? 'day' : 'account');
    const allowed = account ? ACCOUNT_BY : ALL_ACCOUNTS_BY;
    if (!allowed.includes(by)) {
      const hint = account ? '' : ' (--by key, member and group need --account)';
      throw new CliError(`--by: expected one of ${allowed.join(', ')}${hint}.\n\n${this.usage}`, EXIT.usage);
    }
    const query = { by, starting_at: str(values.since), ending_at: untilParam(str(values.until)) };
    const summary = account
      ? await backend.request('GET', `/accounts/${enc(account)}/usage_summary`, { query })
      : await backend.request('GET', '/usage', { query });
    const range = `${summary.starting_at} to ${summary.ending_at}`;
    return { json: summary.data, text: `Usage ${account ? `of ${account}` : 'of all accounts'} by ${by}, ${range}\n${table(summary.data.map((r: Json) => humanRow(by, r)))}` };
  },
};
