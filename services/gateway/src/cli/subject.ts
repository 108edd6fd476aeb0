import { CliError, EXIT, type Backend, type Json } from './backend';
import { accountPath, enc, str, type Values } from './command';
import { findKey, memberId } from './lookup';

/** What `keygate limit` and `keygate policy` act on: one of --member, --group, --key, else the account. */
export type Subject =
  | { kind: 'account'; path: string }
  | { kind: 'member'; path: string; id: string }
  | { kind: 'group'; path: string; id: string }
  | { kind: 'key'; path: string; id: string; key: Json };

export const SUBJECT_OPTIONS = {
  account: { type: 'string' },
  member: { type: 'string' },
  group: { type: 'string' },
  key: { type: 'string' },
} as const;

/**
 * The subject the flags name. --account names the account (a key's account is looked up when
 * only --key is given); without --member, --group or --key the subject is the account itself.
 */
export async function subjectOf(values: Values, backend: Backend, usage: string): Promise<Subject> {
  const given = (['member', 'group', 'key'] as const).filter((f) => str(values[f]) !== undefined);
  if (given.length > 1)
    throw new CliError(
      `Give at most one of --member, --group and --key (got ${given.map((f) => `--${f}`).join(', ')}).\n\n${usage}`,
      EXIT.usage,
    );
  const keyId = str(values.key);
  if (keyId) {
    const { key, accountPath: path } = await findKey(backend, keyId, str(values.account));
    if (key.kind === 'admin')
      throw new CliError(`${keyId} is an admin key: limits and policies apply to app keys.`, EXIT.usage);
    return { kind: 'key', path, id: key.id, key };
  }
  const path = accountPath(values, usage);
  const member = str(values.member);
  if (member) return { kind: 'member', path, id: await memberId(backend, path, member) };
  const group = str(values.group);
  if (group) {
    await backend.request('GET', `${path}/rbac_groups/${enc(group)}`);
    return { kind: 'group', path, id: group };
  }
  return { kind: 'account', path };
}

/** The subject in the API's scope shape (spend limits and model policies share it). */
export function scopeOf(s: Subject): Json {
  if (s.kind === 'member') return { type: 'user', user_id: s.id };
  if (s.kind === 'group') return { type: 'rbac_group', rbac_group_id: s.id };
  if (s.kind === 'key') return { type: 'api_key', api_key_id: s.id };
  return { type: 'organization' };
}

/** A scope of the API as people read it. */
export function scopeText(scope: Json | undefined): string {
  if (!scope || scope.type === 'organization') return 'account';
  if (scope.type === 'user') return `member ${scope.user_id}`;
  if (scope.type === 'rbac_group') return `group ${scope.rbac_group_id}`;
  if (scope.type === 'api_key') return `key ${scope.api_key_id}`;
  if (scope.type === 'service_account') return `service account ${scope.service_account_id}`;
  return String(scope.type);
}

export const subjectText = (s: Subject) => (s.kind === 'account' ? 'the account' : `${s.kind} ${s.id}`);

/** Dollars as people type them ("20", "20.50", "$20") into the API's integer string of cents. */
export function centsOf(flag: string, raw: string): string {
  const m = /^\$?(\d{1,10})(?:\.(\d{1,2}))?$/.exec(raw.trim());
  if (!m)
    throw new CliError(
      `--${flag}: expected an amount in US dollars such as 20 or 20.50, got '${raw}'.`,
      EXIT.usage,
    );
  return String(Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0')));
}

export const usd = (cents: number | string | null | undefined) =>
  cents === null || cents === undefined ? 'none' : `$${(Number(cents) / 100).toFixed(2)}`;
