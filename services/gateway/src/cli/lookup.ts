import { CliError, EXIT, type Backend, type Json, type Query } from './backend';
import { enc, str, type Values } from './command';

/** Every item of a list endpoint (the provider's list shape), page after page. */
export async function listAll(backend: Backend, path: string, query: Query = {}): Promise<Json[]> {
  const items: Json[] = [];
  let after: string | undefined;
  do {
    const page = await backend.request('GET', path, { query: { ...query, limit: '1000', after_id: after } });
    items.push(...page.data);
    after = page.has_more ? page.last_id : undefined;
  } while (after);
  return items;
}

/**
 * A member given by id (`user_…`) or by email: an email names the account's active member
 * with that address (case-insensitive).
 */
export async function memberId(backend: Backend, accountPath: string, ref: string): Promise<string> {
  if (!ref.includes('@')) return ref;
  const page = await backend.request('GET', `${accountPath}/users`, {
    query: { email: ref, status: 'active', limit: '1' },
  });
  const member = page.data[0];
  if (!member)
    throw new CliError(
      `--member: no active member with email '${ref}' in ${accountPath.split('/').pop()}.`,
      EXIT.notFound,
    );
  return member.id;
}

/** `--member` as an id, when given. */
export async function memberOption(
  backend: Backend,
  accountPath: string,
  values: Values,
): Promise<string | undefined> {
  const ref = str(values.member);
  return ref === undefined ? undefined : memberId(backend, accountPath, ref);
}

/**
 * A key by its id alone: key ids are unique across accounts, so the account is looked up
 * (and, when --account is given too, checked).
 */
export async function findKey(
  backend: Backend,
  id: string,
  account: string | undefined,
): Promise<{ key: Json; accountPath: string }> {
  const key = await backend.request('GET', `/api_keys/${enc(id)}`);
  if (account && key.account_id !== account)
    throw new CliError(`No API key with id '${id}' in account '${account}'.`, EXIT.notFound);
  return { key, accountPath: `/accounts/${enc(key.account_id)}` };
}
