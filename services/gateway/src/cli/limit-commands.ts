import { CliError, EXIT, type Backend, type Json } from './backend';
import { enc, positiveInt, str, type Command, type Values } from './command';
import { controlsOf, keyPath } from './limit-list';
import { listAll } from './lookup';
import { table } from './output';
import { centsOf, SUBJECT_OPTIONS, scopeOf, subjectOf, subjectText, usd, type Subject } from './subject';

const PERIODS = ['daily', 'weekly', 'monthly'];
const RATES = [
  ['rpm', 'requests_per_minute'],
  ['itpm', 'input_tokens_per_minute'],
  ['otpm', 'output_tokens_per_minute'],
] as const;

function periodFrom(values: Values): string {
  const p = str(values.period) ?? 'monthly';
  if (!PERIODS.includes(p))
    throw new CliError(`--period: expected one of ${PERIODS.join(', ')}, got '${p}'.`, EXIT.usage);
  return p;
}

/** A member's, group's or the account's rate limits, through the API's rate-limit entries. */
async function setScopeRates(
  backend: Backend,
  s: Subject,
  limits: { type: string; value: number | null }[],
): Promise<{ json: Json; text: string }> {
  const e = await backend.request('POST', `${s.path}/rate_limits`, { body: { scope: scopeOf(s), limits } });
  if (e.type === 'rate_limit_deleted')
    return { json: e, text: `${subjectText(s)} has no rate limits of its own now.` };
  const text = RATES.map(
    ([flag, field]) => `${flag} ${e.limits.find((l: Json) => l.type === field)?.value ?? 'none'}`,
  );
  return { json: e, text: `Rate limits of ${subjectText(s)}: ${text.join(', ')} (${e.id})` };
}

const spendText = (l: Json) =>
  `${l.amount === null ? 'no limit' : usd(l.amount)} ${l.period}, hold ${l.hold} (${l.id})`;

const rateText = (k: Json) =>
  RATES.map(([flag, field]) => `${flag} ${k.limits?.[field] ?? 'none'}`).join(', ');

export const limitCommands: Record<string, Command> = {
  'limit list': {
    summary: 'Every spend limit, budget and rate limit that applies to a member, group, key or the account',
    usage: `Usage: keygate limit list --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID] [--json]

Shows the subject's own limits and those it inherits (its groups' and the account's spend
limits, the account's budgets), with what is spent and left this period and when it resets.
Without --member, --group or --key: everything set in the account.`,
    options: SUBJECT_OPTIONS,
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const rows = await controlsOf(backend, s);
      return {
        json: rows,
        text: `Limits that apply to ${subjectText(s)}:\n${table(rows as unknown as Record<string, unknown>[])}`,
      };
    },
  },

  'limit set': {
    summary: 'Set a spend limit (member, group, account) or rate limits (rpm, itpm, otpm; also per key)',
    usage: `Usage: keygate limit set --account ID [--member USER_ID|EMAIL | --group GROUP_ID] --spend USD
                         [--period daily|weekly|monthly] [--strict] [--json]
       keygate limit set --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID]
                         [--rpm N] [--itpm N] [--otpm N] [--json]

  --spend    the spend limit in US dollars (20 or 20.50); replaces the subject's limit for the period
  --strict   a running call holds its ceiling (every max_token at the output price) rather than
             its expected cost: refuses early rather than ever passing the limit
  --rpm, --itpm, --otpm   requests, input tokens (cache reads not counted) and output tokens per
             minute of the key, member, group or (no subject) the whole account`,
    options: {
      ...SUBJECT_OPTIONS,
      spend: { type: 'string' },
      period: { type: 'string' },
      strict: { type: 'boolean' },
      rpm: { type: 'string' },
      itpm: { type: 'string' },
      otpm: { type: 'string' },
    },
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const spend = str(values.spend);
      const rates = RATES.filter(([flag]) => str(values[flag]) !== undefined);
      if (spend === undefined && rates.length === 0)
        throw new CliError(`Give --spend or one of --rpm, --itpm, --otpm.\n\n${this.usage}`, EXIT.usage);
      if (spend !== undefined && rates.length > 0)
        throw new CliError('Give --spend or rate limits, not both in one command.', EXIT.usage);
      if (spend !== undefined) {
        if (s.kind === 'key')
          throw new CliError(
            "Spend limits are set on a member, a group or the account; a key's own monthly cap is keygate key update --monthly-cap-usd.",
            EXIT.usage,
          );
        const body = {
          scope: scopeOf(s),
          amount: centsOf('spend', spend),
          period: periodFrom(values),
          hold: values.strict ? 'ceiling' : 'expected',
        };
        const l = await backend.request('POST', `${s.path}/spend_limits`, { body });
        return { json: l, text: `Spend limit of ${subjectText(s)}: ${spendText(l)}` };
      }
      if (values.strict) throw new CliError('--strict applies to spend limits (--spend).', EXIT.usage);
      const limits: Json = {};
      for (const [flag, field] of rates) {
        const n = positiveInt(values, flag);
        if (!n) throw new CliError(`--${flag}: expected a whole number of at least 1.`, EXIT.usage);
        limits[field] = n;
      }
      if (s.kind !== 'key')
        return setScopeRates(
          backend,
          s,
          Object.entries(limits).map(([type, value]) => ({ type, value: value as number })),
        );
      const k = await backend.request('POST', keyPath(s), { body: { limits } });
      return { json: k, text: `Rate limits of key ${k.id}: ${rateText(k)}` };
    },
  },

  'limit remove': {
    summary: 'Remove a spend limit or rate limits (member, group, account, key)',
    usage: `Usage: keygate limit remove --account ID [--member USER_ID|EMAIL | --group GROUP_ID] --spend
                            [--period daily|weekly|monthly] [--json]
       keygate limit remove --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID]
                            [--rpm] [--itpm] [--otpm] [--json]

  --spend   removes the subject's own spend limit for the period (monthly unless --period);
            the subject then falls back to its group's or the account's
  --rpm, --itpm, --otpm   lift those rate limits of the subject (a member then falls back to the
             plan's member default)`,
    options: {
      ...SUBJECT_OPTIONS,
      spend: { type: 'boolean' },
      period: { type: 'string' },
      rpm: { type: 'boolean' },
      itpm: { type: 'boolean' },
      otpm: { type: 'boolean' },
    },
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const rates = RATES.filter(([flag]) => values[flag] === true);
      if (!values.spend && rates.length === 0)
        throw new CliError(`Give --spend or one of --rpm, --itpm, --otpm.\n\n${this.usage}`, EXIT.usage);
      if (values.spend) {
        if (s.kind === 'key')
          throw new CliError(
            'Keys have no spend limit of their own: give --member, --group or no subject.',
            EXIT.usage,
          );
        const period = periodFrom(values);
        const scope = scopeOf(s);
        const mine = (await listAll(backend, `${s.path}/spend_limits`)).find(
          (l) => l.period === period && JSON.stringify(l.scope) === JSON.stringify(scope),
        );
        if (!mine)
          throw new CliError(`${subjectText(s)} has no ${period} spend limit of its own.`, EXIT.notFound);
        const res = await backend.request('DELETE', `${s.path}/spend_limits/${enc(mine.id)}`);
        return { json: res, text: `Removed the ${period} spend limit of ${subjectText(s)} (${mine.id}).` };
      }
      if (s.kind !== 'key')
        return setScopeRates(
          backend,
          s,
          rates.map(([, type]) => ({ type, value: null })),
        );
      const limits = Object.fromEntries(rates.map(([, field]) => [field, null]));
      const k = await backend.request('POST', keyPath(s), { body: { limits } });
      return { json: k, text: `Rate limits of key ${k.id}: ${rateText(k)}` };
    },
  },
};
