import { createInterface } from 'node:readline';
import { CliError, EXIT, type Json } from './backend';
import { accountPath, required, str, type Command, type Values } from './command';
import { details } from './output';

const idpRow = (p: Json) => ({
  name: p.name,
  issuer: p.issuer,
  client_id: p.client_id,
  allowed_domains: (p.allowed_domains as string[]).join(', ') || '(any)',
  groups_claim: p.groups_claim,
  provision:
    p.provision === 'group' ? `by group: ${(p.provision_groups as string[]).join(', ')}` : 'by domain',
  link_existing_members: p.link_existing_members ? 'yes (verified emails only)' : 'no',
  sign_in: p.sign_in_path,
});

const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : []);

/** The first line of stdin (a pipe, or typed at a terminal after a prompt on stderr). */
async function firstLine(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Client secret: ');
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

/**
 * The client secret, never from the command line (ps and shell history show it): stdin with
 * --client-secret-stdin, else KEYGATE_IDP_CLIENT_SECRET, else none (a change keeps the stored one).
 */
async function clientSecret(values: Values): Promise<string | undefined> {
  if (values['client-secret'] !== undefined)
    throw new CliError(
      '--client-secret is refused: a secret on the command line shows in ps and shell history. Pipe it with --client-secret-stdin (printf %s "$SECRET" | keygate idp set … --client-secret-stdin) or set KEYGATE_IDP_CLIENT_SECRET.',
      EXIT.usage,
    );
  if (values['client-secret-stdin']) {
    const secret = (await firstLine()).trim();
    if (!secret) throw new CliError('--client-secret-stdin: stdin gave no secret.', EXIT.usage);
    return secret;
  }
  return process.env.KEYGATE_IDP_CLIENT_SECRET || undefined;
}

export const idpCommands: Record<string, Command> = {
  'idp set': {
    summary: "Connect an account's OIDC identity provider (members sign in with the company account)",
    usage: `Usage: keygate idp set --account ID --name NAME --issuer URL --client-id ID [--client-secret-stdin]
          [--domain DOMAIN]... [--groups-claim CLAIM] [--provision domain|group] [--provision-group GROUP]...
          [--link-existing-members] [--json]

The issuer is discovered first (through the egress policy). The client secret is read from stdin
(--client-secret-stdin; a prompt at a terminal) or KEYGATE_IDP_CLIENT_SECRET, never from the
command line, and stored encrypted; a change may leave it out to keep the stored one, except a
change of issuer. People whose email is in a --domain (any, if none is given) are added as members
on first sign-in; with --provision group only members of a --provision-group are. An existing
member is taken over by a first sign-in with the same verified email only with
--link-existing-members (or when the provider's SCIM client created it). The provider's redirect
URI for the dashboard is <gateway>/dashboard/sign-in/idp/callback.`,
    options: {
      account: { type: 'string' },
      name: { type: 'string' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'client-secret-stdin': { type: 'boolean' },
      'link-existing-members': { type: 'boolean' },
      domain: { type: 'string', multiple: true },
      'groups-claim': { type: 'string' },
      provision: { type: 'string' },
      'provision-group': { type: 'string', multiple: true },
    },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const body: Json = {
        name: required(values, 'name', this.usage),
        issuer: required(values, 'issuer', this.usage),
        client_id: required(values, 'client-id', this.usage),
        allowed_domains: list(values.domain),
        provision: str(values.provision) ?? 'domain',
        provision_groups: list(values['provision-group']),
        link_existing_members: values['link-existing-members'] === true,
      };
      const secret = await clientSecret(values);
      if (secret) body.client_secret = secret;
      if (str(values['groups-claim'])) body.groups_claim = str(values['groups-claim']);
      const p = await backend.request('POST', `${path}/identity_provider`, { body });
      return { json: p, text: `Identity provider connected.\n${details(idpRow(p))}` };
    },
  },

  'idp show': {
    summary: "Show an account's identity provider",
    usage: 'Usage: keygate idp show --account ID [--json]',
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const p = await backend.request('GET', `${accountPath(values, this.usage)}/identity_provider`);
      return { json: p, text: details(idpRow(p)) };
    },
  },

  'idp remove': {
    summary: "Disconnect an account's identity provider",
    usage: 'Usage: keygate idp remove --account ID [--json]',
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const res = await backend.request('DELETE', `${accountPath(values, this.usage)}/identity_provider`);
      return { json: res, text: 'Identity provider disconnected.' };
    },
  },
};
