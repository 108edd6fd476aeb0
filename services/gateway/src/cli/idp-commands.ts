import type { Json } from './backend';
import { accountPath, required, str, type Command } from './command';
import { details } from './output';

const idpRow = (p: Json) => ({
  name: p.name,
  issuer: p.issuer,
  client_id: p.client_id,
  allowed_domains: (p.allowed_domains as string[]).join(', ') || '(any)',
  groups_claim: p.groups_claim,
  provision:
    p.provision === 'group' ? `by group: ${(p.provision_groups as string[]).join(', ')}` : 'by domain',
  sign_in: p.sign_in_path,
});

const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : []);

export const idpCommands: Record<string, Command> = {
  'idp set': {
    summary: "Connect an account's OIDC identity provider (members sign in with the company account)",
    usage: `Usage: keygate idp set --account ID --name NAME --issuer URL --client-id ID [--client-secret SECRET]
          [--domain DOMAIN]... [--groups-claim CLAIM] [--provision domain|group] [--provision-group GROUP]... [--json]

The issuer is discovered first (through the egress policy). The client secret is stored encrypted;
on a change it may be left out to keep the stored one. People whose email is in a --domain (any, if
none is given) are added as members on first sign-in; with --provision group only members of a
--provision-group are. The provider's redirect URI for the dashboard is <gateway>/dashboard/sign-in/idp/callback.`,
    options: {
      account: { type: 'string' },
      name: { type: 'string' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
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
      };
      if (str(values['client-secret'])) body.client_secret = str(values['client-secret']);
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
