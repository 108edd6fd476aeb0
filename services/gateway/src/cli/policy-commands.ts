import { CliError, EXIT, type Backend, type Json } from './backend';
import { positiveInt, shortDate, str, type Command } from './command';
import { table } from './output';
import { SUBJECT_OPTIONS, scopeOf, scopeText, subjectOf, subjectText, type Subject } from './subject';

const policyRow = (p: Json) => ({
  set_on: scopeText(p.scope),
  allowed_models: p.allowed_models === null ? 'any' : p.allowed_models.join(', '),
  max_tokens: p.max_tokens ?? 'any',
  updated: shortDate(p.updated_at),
});

const same = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b);

/** The member a subject's calls are made as, when it has one. */
const memberOf = (s: Subject) => (s.kind === 'member' ? s.id : s.kind === 'key' ? s.key.member_id : null);

/**
 * The policies that apply to the subject: the account's, its groups', its member's and its own.
 * A call must pass every one of them (the gateway checks each scope in turn).
 */
async function applying(backend: Backend, s: Subject): Promise<Json[]> {
  const all: Json[] = (await backend.request('GET', `${s.path}/model_policies`)).data;
  if (s.kind === 'account') return all;
  const member = memberOf(s);
  let groups: string[] = s.kind === 'group' ? [s.id] : [];
  if (member) {
    const groupList: Json[] = (
      await backend.request('GET', `${s.path}/rbac_groups`, { query: { limit: '1000' } })
    ).data;
    const withMember = await Promise.all(
      groupList.map(async (g) => {
        const members = await backend.request('GET', `${s.path}/rbac_groups/${g.id}/members`, {
          query: { limit: '1000' },
        });
        return members.data.some((m: Json) => m.user_id === member || m.id === member) ? g.id : null;
      }),
    );
    groups = withMember.filter((g): g is string => g !== null);
  }
  return all.filter(
    (p) =>
      p.scope.type === 'organization' ||
      (p.scope.type === 'rbac_group' && groups.includes(p.scope.rbac_group_id)) ||
      (p.scope.type === 'user' && p.scope.user_id === member) ||
      same(p.scope, scopeOf(s)),
  );
}

export const policyCommands: Record<string, Command> = {
  'policy show': {
    summary:
      'The model policies (allowed models, max_tokens) that apply to a member, group, key or the account',
    usage: `Usage: keygate policy show --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID] [--json]

A call must pass every policy listed: the account's, its member's groups', its member's and the key's.
Without --member, --group or --key: every policy set in the account.`,
    options: SUBJECT_OPTIONS,
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const rows = await applying(backend, s);
      return {
        json: rows,
        text: `Model policies that apply to ${subjectText(s)}:\n${table(rows.map(policyRow))}`,
      };
    },
  },

  'policy set': {
    summary: 'Set the models a member, group, key or the account may call',
    usage: `Usage: keygate policy set --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID]
                          --models MODEL[,MODEL…] [--max-tokens N] [--json]

  --models      model ids or family patterns ending in * (claude-sonnet-*); 'any' lifts the list
  --max-tokens  the largest max_tokens a call may ask for; 'any' lifts it
Replaces the subject's own policy; policies of other scopes still apply.`,
    options: { ...SUBJECT_OPTIONS, models: { type: 'string' }, 'max-tokens': { type: 'string' } },
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const models = str(values.models);
      if (models === undefined) throw new CliError(`--models is required.\n\n${this.usage}`, EXIT.usage);
      const list =
        models === 'any'
          ? null
          : models
              .split(',')
              .map((m) => m.trim())
              .filter(Boolean);
      if (list?.length === 0) throw new CliError("--models: give at least one model, or 'any'.", EXIT.usage);
      const max = str(values['max-tokens']);
      const maxTokens = max === undefined || max === 'any' ? null : positiveInt(values, 'max-tokens');
      if (maxTokens === 0)
        throw new CliError('--max-tokens: expected a whole number of at least 1.', EXIT.usage);
      const p = await backend.request('POST', `${s.path}/model_policies`, {
        body: { scope: scopeOf(s), allowed_models: list, max_tokens: maxTokens ?? null },
      });
      const row = policyRow(p);
      return {
        json: p,
        text: `Model policy of ${subjectText(s)}: models ${row.allowed_models}, max_tokens ${row.max_tokens}`,
      };
    },
  },

  'policy remove': {
    summary: "Remove a member's, group's, key's or the account's own model policy",
    usage:
      'Usage: keygate policy remove --account ID [--member USER_ID|EMAIL | --group GROUP_ID | --key KEY_ID] [--json]',
    options: SUBJECT_OPTIONS,
    async call(values, backend) {
      const s = await subjectOf(values, backend, this.usage);
      const p = await backend.request('DELETE', `${s.path}/model_policies`, { body: { scope: scopeOf(s) } });
      return { json: p, text: `Removed the model policy of ${subjectText(s)}.` };
    },
  },
};
