import type { Json } from './backend';
import { accountPath, enc, moreNote, positiveInt, required, shortDate, str, type Command } from './command';
import { memberId } from './lookup';
import { details, table } from './output';

const memberRow = (m: Json) => ({
  id: m.id,
  email: m.email,
  name: m.name,
  role: m.role,
  status: m.status,
  added: shortDate(m.added_at),
});

export const memberCommands: Record<string, Command> = {
  'member add': {
    summary: 'Add a member (a seat) to an account',
    usage: `Usage: keygate member add --account ID --email EMAIL [--name NAME] [--role developer|admin] [--json]

Team and scale plans bill per seat; the solo plan has one.`,
    options: {
      account: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
    },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const body: Json = {
        email: required(values, 'email', this.usage),
        role: str(values.role) ?? 'developer',
      };
      if (str(values.name)) body.name = str(values.name);
      const m = await backend.request('POST', `${path}/users`, { body });
      return { json: m, text: `Added member ${m.id}\n${details(memberRow(m))}` };
    },
  },

  'member list': {
    summary: "List an account's members",
    usage:
      'Usage: keygate member list --account ID [--all] [--limit N] [--json]\n\n  --all  include removed members',
    options: { account: { type: 'string' }, all: { type: 'boolean' }, limit: { type: 'string' } },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const page = await backend.request('GET', `${path}/users`, {
        query: { status: values.all ? 'all' : 'active', limit: String(positiveInt(values, 'limit') ?? 100) },
      });
      return { json: page.data, text: table(page.data.map(memberRow)) + moreNote(page, 'raise --limit') };
    },
  },

  'member remove': {
    summary: 'Remove a member: their keys stop working at once',
    usage: `Usage: keygate member remove --account ID --member USER_ID|EMAIL [--json]

The member's keys are refused on every gateway within a second; their past usage stays theirs.`,
    options: { account: { type: 'string' }, member: { type: 'string' } },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const id = await memberId(backend, path, required(values, 'member', this.usage));
      const res = await backend.request('DELETE', `${path}/users/${enc(id)}`);
      return { json: res, text: `Removed member ${res.id}.` };
    },
  },
};
