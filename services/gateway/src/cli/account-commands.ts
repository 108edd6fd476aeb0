import { CliError, EXIT, type Json } from './backend';
import {
  accountPath,
  moreNote,
  positiveInt,
  required,
  shortDate,
  str,
  type Command,
  type Values,
} from './command';
import { details, table } from './output';

function providerKeyFrom(values: Values): string | undefined {
  const envName = str(values['provider-key-env']);
  if (!envName) return undefined;
  const key = process.env[envName];
  if (!key)
    throw new CliError(
      `--provider-key-env: $${envName} is not set (export the Anthropic key in it first).`,
      EXIT.usage,
    );
  return key;
}

const accountRow = (a: Json) => ({
  id: a.id,
  name: a.name,
  plan: typeof a.plan === 'object' ? a.plan.id : a.plan,
  status: a.status,
  provider_key: a.provider_key_hint,
  trial_ends: shortDate(a.trial_ends_at)?.slice(0, 10),
  created: shortDate(a.created_at),
});

/** suspend / reactivate: the same call on a different path. */
function statusCommand(action: 'suspend' | 'reactivate', summary: string, effect: string): Command {
  return {
    summary,
    usage: `Usage: keygate account ${action} --account ID [--json]\n\n${effect}`,
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const account = await backend.request('POST', `${accountPath(values, this.usage)}/${action}`);
      return { json: account, text: `Account ${account.id} is now ${account.status}.` };
    },
  };
}

export const accountCommands: Record<string, Command> = {
  'account create': {
    summary: 'Create an account on a plan (starts its trial)',
    usage: `Usage: keygate account create --name NAME --plan solo|team|scale [--provider-key-env VAR]
                              [--admin-email EMAIL [--admin-name NAME]] [--trial-days N] [--json]

  --provider-key-env VAR  read the account's Anthropic key from $VAR (never pass it as an argument)
  --admin-email EMAIL     also create the first admin member and an admin key (shown once)
  --trial-days N          trial length (default: the plan's, 14 days)

With --json the answer carries the admin key at .admin.key.key.`,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      'provider-key-env': { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-name': { type: 'string' },
      'trial-days': { type: 'string' },
    },
    async call(values, backend) {
      const body: Json = {
        name: required(values, 'name', this.usage),
        plan: required(values, 'plan', this.usage),
      };
      const providerKey = providerKeyFrom(values);
      if (providerKey) body.provider_key = providerKey;
      if (str(values['admin-email'])) body.admin_email = str(values['admin-email']);
      if (str(values['admin-name'])) body.admin_name = str(values['admin-name']);
      const trialDays = positiveInt(values, 'trial-days');
      if (trialDays !== undefined) body.trial_days = trialDays;
      const account = await backend.request('POST', '/accounts', { body });
      const { admin, ...shown } = account;
      let text = `Created account ${account.id} (via ${backend.via})\n${details(shown)}`;
      if (admin)
        text += `\n\nAdmin member ${admin.member.id} (${admin.member.email})\nAdmin key ${admin.key.id} (shown once, store it now):\n  ${admin.key.key}`;
      return { json: account, text };
    },
  },

  'account list': {
    summary: 'List accounts, newest first',
    usage: 'Usage: keygate account list [--search TEXT] [--status active|suspended] [--limit N] [--json]',
    options: { search: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' } },
    async call(values, backend) {
      const page = await backend.request('GET', '/accounts', {
        query: {
          search: str(values.search),
          status: str(values.status),
          limit: String(positiveInt(values, 'limit') ?? 100),
        },
      });
      return {
        json: page.data,
        text: table(page.data.map(accountRow)) + moreNote(page, 'raise --limit or narrow with --search'),
      };
    },
  },

  'account get': {
    summary: 'Show one account, its plan and seats',
    usage: 'Usage: keygate account get --account ID [--json]',
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const a = await backend.request('GET', accountPath(values, this.usage));
      return {
        json: a,
        text: details({
          ...accountRow(a),
          seats: `${a.seats.used}${a.seats.max ? ` of ${a.seats.max}` : ''}`,
        }),
      };
    },
  },

  'account suspend': statusCommand(
    'suspend',
    'Suspend an account: its keys get 403 at once',
    'Every key of the account is refused (403 permission_error) on every gateway within a second.',
  ),
  'account reactivate': statusCommand(
    'reactivate',
    'Reactivate a suspended account',
    "The account's keys work again at once.",
  ),

  'account set-provider-key': {
    summary: "Set an account's Anthropic key (stored encrypted, never shown)",
    usage: `Usage: keygate account set-provider-key --account ID --provider-key-env VAR [--json]

Reads the key from $VAR so it never appears in the shell history or the process list.`,
    options: { account: { type: 'string' }, 'provider-key-env': { type: 'string' } },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const providerKey = providerKeyFrom(values);
      if (!providerKey) throw new CliError(`--provider-key-env is required.\n\n${this.usage}`, EXIT.usage);
      const a = await backend.request('POST', `${path}/provider_key`, {
        body: { provider_key: providerKey },
      });
      return { json: a, text: `Provider key of ${a.id} set (${a.provider_key_hint}).` };
    },
  },

  'account set-plan': {
    summary: 'Move an account to another plan',
    usage: 'Usage: keygate account set-plan --account ID --plan solo|team|scale [--json]',
    options: { account: { type: 'string' }, plan: { type: 'string' } },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const a = await backend.request('POST', path, { body: { plan: required(values, 'plan', this.usage) } });
      return { json: a, text: `Account ${a.id} is now on the ${a.plan} plan.` };
    },
  },

  plans: {
    summary: 'List the plans and their prices',
    usage: 'Usage: keygate plans [--json]',
    options: {},
    async call(_values, backend) {
      const { data } = await backend.request('GET', '/plans');
      const rows = data.map((p: Json) => ({
        id: p.id,
        name: p.name,
        price: `${(p.price_cents / 100).toFixed(2)} ${p.currency}${p.per_seat ? ' per seat' : ''} per month`,
        seats: p.max_seats ?? 'unlimited',
        trial_days: p.trial_days,
      }));
      return { json: data, text: table(rows) };
    },
  },
};
