import { CliError, EXIT, type Json } from './backend';
import { accountPath, enc, required, str, type Command, type Values } from './command';
import { details, table } from './output';

const row = (u: Json) => ({
  position: u.position,
  id: u.id,
  kind: u.kind,
  base_url: u.base_url,
  auth: u.auth,
  credential: u.credential_hint,
  workspace: u.workspace_id ?? '',
  region: u.region ?? '',
  models: Object.entries((u.model_map as Record<string, string>) ?? {})
    .map(([from, to]) => `${from}=${to}`)
    .join(', '),
});

/** The credential comes from an environment variable, so it is never on a command line or in shell history. */
function credentialFrom(values: Values, usage: string): string {
  const name = required(values, 'credential-env', usage);
  const value = process.env[name];
  if (!value)
    throw new CliError(
      `--credential-env: $${name} is not set (export the credential in it first).`,
      EXIT.usage,
    );
  return value;
}

/** `--model FROM=TO`, repeatable: the upstream's id for a model. */
function modelMap(values: Values): Record<string, string> | undefined {
  const given = values.model as unknown as string[] | undefined;
  if (!given?.length) return undefined;
  const out: Record<string, string> = {};
  for (const m of given) {
    const i = m.indexOf('=');
    if (i < 1) throw new CliError(`--model: expected FROM=TO, got '${m}'.`, EXIT.usage);
    out[m.slice(0, i)] = m.slice(i + 1);
  }
  return out;
}

export const upstreamCommands: Record<string, Command> = {
  'upstream add': {
    summary: "Add an upstream after the account's others (a call fails over to it before its first byte)",
    usage: `Usage: keygate upstream add --account ID --kind anthropic|aws|bedrock|google|foundry --base-url URL
          --auth x-api-key|bearer|sigv4|google-service-account --credential-env NAME [--workspace-id ID] [--region REGION]
          [--model FROM=TO]... [--refuse-beta BETA]... [--refuse-field FIELD]... [--json]

The credential is read from the environment variable --credential-env names; for sigv4 it is
ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]; for google-service-account, the service account's
JSON key file's text (GOOGLE_SA="$(cat key.json)"). Claude Platform on AWS (aws) needs --workspace-id.
--refuse-beta and --refuse-field drop a beta or a top-level body field this upstream refuses.`,
    options: {
      account: { type: 'string' },
      kind: { type: 'string' },
      'base-url': { type: 'string' },
      auth: { type: 'string' },
      'credential-env': { type: 'string' },
      'workspace-id': { type: 'string' },
      region: { type: 'string' },
      model: { type: 'string', multiple: true },
      'refuse-beta': { type: 'string', multiple: true },
      'refuse-field': { type: 'string', multiple: true },
    },
    async call(values, backend) {
      const body: Json = {
        kind: required(values, 'kind', this.usage),
        base_url: required(values, 'base-url', this.usage),
        auth: required(values, 'auth', this.usage),
        credential: credentialFrom(values, this.usage),
      };
      if (str(values['workspace-id'])) body.workspace_id = str(values['workspace-id']);
      if (str(values.region)) body.region = str(values.region);
      const models = modelMap(values);
      if (models) body.model_map = models;
      const betas = values['refuse-beta'] as unknown as string[] | undefined;
      if (betas?.length) body.refused_betas = betas;
      const fields = values['refuse-field'] as unknown as string[] | undefined;
      if (fields?.length) body.refused_fields = fields;
      const u = await backend.request('POST', `${accountPath(values, this.usage)}/upstreams`, { body });
      return { json: u, text: `Added upstream ${u.id}\n${details(row(u))}` };
    },
  },

  'upstream list': {
    summary: "List an account's upstreams in the order calls try them (after its provider key)",
    usage: 'Usage: keygate upstream list --account ID [--json]',
    options: { account: { type: 'string' } },
    async call(values, backend) {
      const page = await backend.request('GET', `${accountPath(values, this.usage)}/upstreams`);
      const rows = (page.data as Json[]).map(row);
      return {
        json: page,
        text: rows.length ? table(rows) : 'No upstreams: calls go to the provider key alone.',
      };
    },
  },

  'upstream remove': {
    summary: 'Remove an upstream',
    usage: 'Usage: keygate upstream remove --account ID ups_… [--json]',
    options: { account: { type: 'string' }, id: { type: 'string' } },
    positional: 'id',
    async call(values, backend) {
      const id = enc(required(values, 'id', this.usage));
      const r = await backend.request('DELETE', `${accountPath(values, this.usage)}/upstreams/${id}`);
      return { json: r, text: `Removed upstream ${r.id}.` };
    },
  },

  'upstream order': {
    summary: 'Put the upstreams in the order calls try them',
    usage: 'Usage: keygate upstream order --account ID --ids ups_…,ups_…[,…] [--json]',
    options: { account: { type: 'string' }, ids: { type: 'string' } },
    async call(values, backend) {
      const ids = required(values, 'ids', this.usage)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const page = await backend.request('POST', `${accountPath(values, this.usage)}/upstreams/order`, {
        body: { ids },
      });
      return { json: page, text: table((page.data as Json[]).map(row)) };
    },
  },
};
