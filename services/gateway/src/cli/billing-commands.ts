import { CliError, EXIT, type Json } from './backend';
import { accountPath, enc, moreNote, positiveInt, required, shortDate, str, type Command } from './command';
import { details, table } from './output';

const eur = (cents: number) => `${(cents / 100).toFixed(2)} EUR`;
const day = (iso: string | null) => shortDate(iso)?.slice(0, 10) ?? '';

const invoiceRow = (i: Json) => ({
  id: i.id,
  number: i.number,
  period: `${day(i.period_start)} to ${day(i.period_end)}`,
  status: i.status,
  total: eur(i.total_cents),
});

export const billingCommands: Record<string, Command> = {
  'account mark-paid': {
    summary: 'Record a payment made outside Stripe: the account is paid until a date',
    usage: `Usage: keygate account mark-paid --account ID --until DATE [--json]

For gateways without Stripe: calls work until DATE (then for the payment grace period,
KEYGATE_PAYMENT_GRACE_DAYS), and the account's invoices up to DATE are marked paid.`,
    options: { account: { type: 'string' }, until: { type: 'string' } },
    async call(values, backend) {
      const until = required(values, 'until', this.usage);
      const s = await backend.request('POST', `${accountPath(values, this.usage)}/mark_paid`, {
        body: { until },
      });
      return { json: s, text: `Account ${s.account_id} is ${s.state}, paid until ${day(s.paid_until)}.` };
    },
  },

  'account set-trial': {
    summary: "Set or extend an account's free trial (gateways without Stripe)",
    usage: `Usage: keygate account set-trial --account ID --until DATE [--json]

Calls work until DATE (a day, 2027-01-31, meaning its midnight UTC, or an RFC 3339 timestamp).
An account whose trial ended is trialing again at once; three days before DATE the account is
told. With Stripe the
trial is Stripe's; to let calls run without any end, start the gateway with KEYGATE_BILLING=off.`,
    options: { account: { type: 'string' }, until: { type: 'string' } },
    async call(values, backend) {
      const until = required(values, 'until', this.usage);
      const s = await backend.request('POST', `${accountPath(values, this.usage)}/set_trial`, {
        body: { until },
      });
      return {
        json: s,
        text: `Account ${s.account_id} is ${s.state}, its trial ends ${day(s.trial.ends_at)} (${s.trial.days_left} day${s.trial.days_left === 1 ? '' : 's'} left).`,
      };
    },
  },

  'account billing': {
    summary: "Show an account's subscription: state, plan, trial, seats, period",
    usage: 'Usage: keygate account billing --account ID [--json]',
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const s = await backend.request('GET', `${accountPath(values, this.usage)}/billing/subscription`);
      const shown = {
        state: s.state,
        calls_allowed: s.calls_allowed,
        plan: s.plan?.id,
        trial_ends: day(s.trial.ends_at),
        trial_days_left: s.trial.days_left,
        seats: `${s.seats.members} member(s), ${s.seats.charged} charged`,
        period: s.current_period ? `${day(s.current_period.start)} to ${day(s.current_period.end)}` : '',
        paid_until: day(s.paid_until),
        cancel_at_period_end: s.cancel_at_period_end,
        notice: s.banner?.message ?? '',
      };
      return { json: s, text: details(shown) };
    },
  },

  'invoice list': {
    summary: "List an account's invoices, newest first",
    usage: 'Usage: keygate invoice list --account ID [--limit N] [--json]',
    options: { account: { type: 'string' }, limit: { type: 'string' } },
    async call(values, backend) {
      const page = await backend.request('GET', `${accountPath(values, this.usage)}/invoices`, {
        query: { limit: String(positiveInt(values, 'limit') ?? 100) },
      });
      return {
        json: page.data,
        text:
          (page.data.length ? table(page.data.map(invoiceRow)) : 'No invoices yet.') +
          moreNote(page, 'raise --limit'),
      };
    },
  },

  'invoice show': {
    summary: 'Show one invoice with its lines',
    usage: 'Usage: keygate invoice show --account ID --invoice ID [--json]',
    options: { account: { type: 'string' }, invoice: { type: 'string' } },
    async call(values, backend) {
      const i = await backend.request(
        'GET',
        `${accountPath(values, this.usage)}/invoices/${enc(required(values, 'invoice', this.usage))}`,
      );
      const lines = table(
        i.lines.map((l: Json) => ({
          description: l.description,
          qty: l.quantity,
          days: l.days === null ? '' : `${l.days}/${l.period_days}`,
          amount: eur(l.amount_cents),
        })),
      );
      const text = `${details(invoiceRow(i))}\n\n${lines}\n\nsubtotal ${eur(i.subtotal_cents)}, tax ${eur(i.tax_cents)}, total ${eur(i.total_cents)}`;
      return { json: i, text };
    },
  },

  'plan update': {
    summary: 'Change a plan of the catalog (or add one): price, seats, trial, limits, retention, features',
    usage: `Usage: keygate plan update --plan ID [--name NAME] [--price-cents N] [--per-seat yes|no] [--min-seats N]
                          [--max-seats N|none] [--trial-days N] [--rpm N] [--itpm N] [--otpm N] [--tpm N]
                          [--spend-cap-cents N]
                          [--retention-days N] [--features "a,b,c"] [--stripe-price price_…] [--json]

Prices are EUR cents per seat (or per account on a plan that is not per seat) per month.`,
    options: {
      plan: { type: 'string' },
      name: { type: 'string' },
      'price-cents': { type: 'string' },
      'per-seat': { type: 'string' },
      'min-seats': { type: 'string' },
      'max-seats': { type: 'string' },
      'trial-days': { type: 'string' },
      rpm: { type: 'string' },
      tpm: { type: 'string' },
      itpm: { type: 'string' },
      otpm: { type: 'string' },
      'spend-cap-cents': { type: 'string' },
      'retention-days': { type: 'string' },
      features: { type: 'string' },
      'stripe-price': { type: 'string' },
    },
    async call(values, backend) {
      const id = required(values, 'plan', this.usage);
      const body: Json = {};
      const num = (flag: string, field: string) => {
        const n = positiveInt(values, flag);
        if (n !== undefined) body[field] = n;
      };
      if (str(values.name)) body.name = str(values.name);
      num('price-cents', 'price_cents');
      num('min-seats', 'min_seats');
      num('trial-days', 'trial_days');
      num('retention-days', 'retention_days');
      if (str(values['per-seat'])) body.per_seat = str(values['per-seat']) === 'yes';
      if (str(values['max-seats']))
        body.max_seats = str(values['max-seats']) === 'none' ? null : positiveInt(values, 'max-seats');
      const limits: Json = {};
      for (const [flag, field] of [
        ['rpm', 'requests_per_minute'],
        ['tpm', 'tokens_per_minute'],
        ['itpm', 'input_tokens_per_minute'],
        ['otpm', 'output_tokens_per_minute'],
        ['spend-cap-cents', 'monthly_spend_cap_cents'],
      ] as const) {
        const n = positiveInt(values, flag);
        if (n !== undefined) limits[field] = n;
      }
      if (Object.keys(limits).length) body.default_limits = limits;
      if (str(values.features) !== undefined)
        body.features = str(values.features)!
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean);
      if (str(values['stripe-price'])) body.stripe_price_id = str(values['stripe-price']);
      if (Object.keys(body).length === 0)
        throw new CliError(`Nothing to change.\n\n${this.usage}`, EXIT.usage);
      const p = await backend.request('POST', `/plans/${enc(id)}`, { body });
      return {
        json: p,
        text: `Plan ${p.id}: ${eur(p.price_cents)}${p.per_seat ? ' per seat' : ''} per month, ${p.trial_days}-day trial, seats ${p.min_seats} to ${p.max_seats ?? 'unlimited'}.`,
      };
    },
  },

  'billing clock': {
    summary:
      'Run the billing clock now (trial ends, grace periods, invoices); gateways also run it on a timer',
    usage: 'Usage: keygate billing clock [--json]',
    options: {},
    async call(_values, backend) {
      const r = await backend.request('POST', '/billing/clock');
      return {
        json: r,
        text: `${r.transitions} transition(s), ${r.notices} notice(s), ${r.invoices} invoice(s).`,
      };
    },
  },
};
