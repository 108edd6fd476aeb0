import { CliError, EXIT, type Json } from './backend';
import {
  accountPath,
  enc,
  moreNote,
  positiveInt,
  required,
  shortDate,
  str,
  type Command,
  type Values,
} from './command';
import { findKey, memberOption } from './lookup';
import { details, table } from './output';

const keyRow = (k: Json) => ({
  id: k.id,
  name: k.name,
  kind: k.kind,
  status: k.status,
  hint: k.partial_key_hint,
  member: k.member_id,
  app: k.app,
  env: k.environment,
  last_used: shortDate(k.last_used_at),
  expires: shortDate(k.expires_at),
});

/** A key as `key update` shows it: its row, its limits and whether its streams are resumable. */
const keyDetails = (k: Json) => ({
  ...keyRow(k),
  rpm: k.limits?.requests_per_minute ?? 'none',
  tpm: k.limits?.tokens_per_minute ?? 'none',
  itpm: k.limits?.input_tokens_per_minute ?? 'none',
  otpm: k.limits?.output_tokens_per_minute ?? 'none',
  monthly_cap_usd:
    k.limits?.monthly_spend_cap_cents == null ? 'none' : (k.limits.monthly_spend_cap_cents / 100).toFixed(2),
  resumable_streams: k.resumable_streams ? 'on' : 'off',
});

/** The flags `limitsFrom` reads, for the commands that set limits. */
const LIMIT_OPTIONS = {
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  itpm: { type: 'string' },
  otpm: { type: 'string' },
  'monthly-cap-usd': { type: 'string' },
} as const;

/** The limits the flags give; with `orNone` (key update), `none` lifts a limit. */
function limitsFrom(values: Values, orNone = false): Json | undefined {
  const limits: Json = {};
  const lifted = (flag: string) => orNone && str(values[flag]) === 'none';
  for (const [flag, field] of [
    ['rpm', 'requests_per_minute'],
    ['tpm', 'tokens_per_minute'],
    ['itpm', 'input_tokens_per_minute'],
    ['otpm', 'output_tokens_per_minute'],
  ] as const) {
    const n = lifted(flag) ? null : positiveInt(values, flag);
    if (n !== undefined) limits[field] = n;
  }
  const cap = str(values['monthly-cap-usd']);
  if (lifted('monthly-cap-usd')) limits.monthly_spend_cap_cents = null;
  else if (cap !== undefined) {
    const dollars = Number(cap);
    if (!Number.isFinite(dollars) || dollars < 0)
      throw new CliError(`--monthly-cap-usd: expected an amount in US dollars, got '${cap}'.`, EXIT.usage);
    limits.monthly_spend_cap_cents = Math.round(dollars * 100);
  }
  return Object.keys(limits).length ? limits : undefined;
}

export const keyCommands: Record<string, Command> = {
  'key create': {
    summary: 'Create an app key (or a --test / --admin key)',
    usage: `Usage: keygate key create --account ID [--member USER_ID|EMAIL] [--app APP] [--env ENV] [--name NAME]
                          [--test | --admin] [--expires WHEN] [--rpm N] [--itpm N] [--otpm N] [--tpm N]
                          [--monthly-cap-usd N] [--resumable] [--json]

  --test               a kg_test_ key: served by the built-in emulator, never billed upstream
  --admin              a kg_admin_ key for the account API (cannot call models)
  --expires WHEN       RFC 3339 timestamp or date after which the key is refused
  --rpm N              requests per minute for this key (429 with retry-after beyond)
  --itpm / --otpm N    input / output tokens per minute, counted as the provider counts them (cache
                       reads are free); --tpm N: both together. Unsaid limits take the plan's defaults
  --monthly-cap-usd N  estimated spend per calendar month (UTC) after which calls get 429
  --resumable          its streams can be picked up again after a dropped connection, without the
                       keygate-resumable header (the gateway then reads each stream to its end)

The secret is printed once (with --json at .key); only its hash is stored.`,
    options: {
      account: { type: 'string' },
      member: { type: 'string' },
      app: { type: 'string' },
      env: { type: 'string' },
      name: { type: 'string' },
      test: { type: 'boolean' },
      admin: { type: 'boolean' },
      expires: { type: 'string' },
      ...LIMIT_OPTIONS,
      resumable: { type: 'boolean' },
    },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      if (values.test && values.admin) throw new CliError('Choose one of --test and --admin.', EXIT.usage);
      const body: Json = { kind: values.admin ? 'admin' : values.test ? 'test' : 'live' };
      const member = await memberOption(backend, path, values);
      if (member) body.member_id = member;
      for (const [flag, field] of [
        ['app', 'app'],
        ['env', 'environment'],
        ['name', 'name'],
        ['expires', 'expires_at'],
      ] as const) {
        if (str(values[flag])) body[field] = str(values[flag]);
      }
      const limits = limitsFrom(values);
      if (limits) body.limits = limits;
      if (values.resumable) body.resumable_streams = true;
      const key = await backend.request('POST', `${path}/api_keys`, { body });
      const { key: secret, ...shown } = key;
      return {
        json: key,
        text: `Created key ${key.id}\n${details(shown)}\n\nSecret (shown once, store it now):\n  ${secret}`,
      };
    },
  },

  'key list': {
    summary: "List an account's keys (with last use)",
    usage: `Usage: keygate key list --account ID [--status active|inactive|archived] [--member USER_ID|EMAIL]
                        [--app APP] [--env ENV] [--limit N] [--json]`,
    options: {
      account: { type: 'string' },
      status: { type: 'string' },
      member: { type: 'string' },
      app: { type: 'string' },
      env: { type: 'string' },
      limit: { type: 'string' },
    },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const page = await backend.request('GET', `${path}/api_keys`, {
        query: {
          status: str(values.status),
          member_id: await memberOption(backend, path, values),
          app: str(values.app),
          environment: str(values.env),
          limit: String(positiveInt(values, 'limit') ?? 100),
        },
      });
      return {
        json: page.data,
        text: table(page.data.map(keyRow)) + moreNote(page, 'raise --limit or filter'),
      };
    },
  },

  'key rotate': {
    summary: 'Give a key a new secret, keeping its id, limits and history',
    usage: `Usage: keygate key rotate KEY_ID [--grace SECONDS] [--json]

  --grace SECONDS  how long the old secret keeps working (default 0: refused at once; at most 7 days)

The new secret is printed once (with --json at .key).`,
    options: { account: { type: 'string' }, key: { type: 'string' }, grace: { type: 'string' } },
    positional: 'key',
    async call(values, backend) {
      const id = required(values, 'key', this.usage);
      const { accountPath: path } = await findKey(backend, id, str(values.account));
      const body = { grace_period_seconds: positiveInt(values, 'grace') ?? 0 };
      const key = await backend.request('POST', `${path}/api_keys/${enc(id)}/rotate`, { body });
      return {
        json: key,
        text: `Rotated key ${key.id}; the old secret is refused from ${shortDate(key.previous_key_expires_at)}.\n\nNew secret (shown once, store it now):\n  ${key.key}`,
      };
    },
  },

  'key update': {
    summary: "Change a key's name, limits or whether its streams are resumable",
    usage: `Usage: keygate key update KEY_ID [--name NAME] [--rpm N|none] [--itpm N|none] [--otpm N|none]
                          [--tpm N|none] [--monthly-cap-usd N|none] [--resumable on|off] [--json]

  --rpm / --itpm / --otpm / --tpm N|none
                           requests / input / output / all tokens per minute for this key; none lifts it
  --monthly-cap-usd N|none estimated spend per calendar month (UTC); none lifts the cap
  --resumable on|off       whether its streams can be picked up again without the keygate-resumable
                           header (a request can still say keygate-resumable: true or false)

What is not given stays as it is. Every gateway applies the change within a second.`,
    options: {
      account: { type: 'string' },
      key: { type: 'string' },
      name: { type: 'string' },
      ...LIMIT_OPTIONS,
      resumable: { type: 'string' },
    },
    positional: 'key',
    async call(values, backend) {
      const id = required(values, 'key', this.usage);
      const body: Json = {};
      if (str(values.name)) body.name = str(values.name);
      const limits = limitsFrom(values, true);
      if (limits) body.limits = limits;
      const resumable = str(values.resumable);
      if (resumable !== undefined) {
        if (resumable !== 'on' && resumable !== 'off')
          throw new CliError(`--resumable: expected on or off, got '${resumable}'.`, EXIT.usage);
        body.resumable_streams = resumable === 'on';
      }
      if (Object.keys(body).length === 0)
        throw new CliError(`Nothing to change: give at least one option.\n\n${this.usage}`, EXIT.usage);
      const { accountPath: path } = await findKey(backend, id, str(values.account));
      const key = await backend.request('POST', `${path}/api_keys/${enc(id)}`, { body });
      return { json: key, text: `Updated key ${key.id}.\n${details(keyDetails(key))}` };
    },
  },

  'key revoke': {
    summary: 'Revoke a key for good (archived): refused everywhere within a second',
    usage: `Usage: keygate key revoke KEY_ID [--json]

Archives the key: it is refused on every gateway within a second and cannot be reactivated.
Its usage stays in reports. To replace a leaked secret but keep the key, use \`keygate key rotate\`.
A key that was already revoked is left as it is: exit code 3.`,
    options: { account: { type: 'string' }, key: { type: 'string' } },
    positional: 'key',
    async call(values, backend) {
      const id = required(values, 'key', this.usage);
      const found = await findKey(backend, id, str(values.account));
      if (found.key.status === 'archived') {
        return {
          json: found.key,
          text: `Key ${id} (${found.key.partial_key_hint}) was already revoked; nothing changed.`,
          exitCode: EXIT.unchanged,
        };
      }
      const key = await backend.request('POST', `${found.accountPath}/api_keys/${enc(id)}`, {
        body: { status: 'archived' },
      });
      return { json: key, text: `Revoked key ${key.id} (${key.partial_key_hint}).\n${details(keyRow(key))}` };
    },
  },
};
