import { CliError, EXIT, type Json } from './backend';
import {
  accountPath,
  enc,
  positiveInt,
  required,
  shortDate,
  str,
  type Command,
  type Values,
} from './command';
import { details, table } from './output';

const issuerRow = (i: Json) => ({
  id: i.id,
  name: i.name,
  issuer_url: i.issuer_url,
  keys: jwksText(i.jwks as Json),
  check_jti: i.check_jti ? 'yes' : 'no',
  max_jwt_lifetime: `${i.max_jwt_lifetime_seconds} s`,
  archived: shortDate(i.archived_at) ?? '',
});

const ruleRow = (r: Json) => {
  const m = r.match as Json;
  const claims = Object.entries((m.claims as Record<string, string> | null) ?? {}).map(
    ([k, v]) => `${k}=${v}`,
  );
  return {
    id: r.id,
    name: r.name,
    issuer: r.issuer_name,
    service_account: (r.target as Json).service_account_name,
    subject: m.subject_prefix ?? '',
    claims: claims.join(', '),
    audience: m.audience ?? '(keygate)',
    lifetime: `${r.token_lifetime_seconds} s`,
    state: r.archived_at ? 'archived' : r.enabled ? 'enabled' : 'disabled',
  };
};

const jwksText = (j: Json) =>
  j.type === 'explicit_url'
    ? String(j.url)
    : j.type === 'inline'
      ? 'inline'
      : `discovery ${j.discovery_base ?? ''}`.trim();

/** `--claim name=value`, repeatable, as the rule's exact-match claims. */
function claims(values: Values): Record<string, string> | undefined {
  const given = values.claim as unknown as string[] | undefined;
  if (!given?.length) return undefined;
  const out: Record<string, string> = {};
  for (const c of given) {
    const i = c.indexOf('=');
    if (i < 1) throw new CliError(`--claim: expected name=value, got '${c}'.`, EXIT.usage);
    out[c.slice(0, i)] = c.slice(i + 1);
  }
  return out;
}

/** The rule's match from --subject, --claim and --audience; undefined when none is given. */
function match(values: Values): Json | undefined {
  const m: Json = {};
  if (str(values.subject)) m.subject_prefix = str(values.subject);
  if (str(values.audience)) m.audience = str(values.audience);
  const c = claims(values);
  if (c) m.claims = c;
  return Object.keys(m).length ? m : undefined;
}

const matchOptions = {
  subject: { type: 'string' },
  claim: { type: 'string', multiple: true },
  audience: { type: 'string' },
  lifetime: { type: 'string' },
} as const;

/** `archive-issuer` and `archive-rule`: one id, one POST. */
function archive(
  what: 'issuers' | 'rules',
  prefix: string,
  summary: string,
  done: (r: Json) => string,
): Command {
  return {
    summary,
    usage: `Usage: keygate federation archive-${what.slice(0, -1)} --account ID ${prefix}_… [--json]`,
    options: { account: { type: 'string' }, id: { type: 'string' } },
    positional: 'id',
    async call(values, backend) {
      const id = enc(required(values, 'id', this.usage));
      const path = `${accountPath(values, this.usage)}/federation_${what}/${id}/archive`;
      const r = await backend.request('POST', path);
      return { json: r, text: done(r) };
    },
  };
}

export const federationCommands: Record<string, Command> = {
  'federation add-issuer': {
    summary: 'Trust an OIDC issuer (GitHub Actions, a Kubernetes cluster…) for workload tokens',
    usage: `Usage: keygate federation add-issuer --account ID --name NAME --issuer-url URL
          [--jwks-url URL | --discovery-base URL] [--max-jwt-lifetime SECONDS] [--no-check-jti] [--json]

The issuer URL is matched exactly against the assertion's iss. Its keys are found by OIDC discovery
at the issuer URL (or --discovery-base), or fetched from --jwks-url, through the egress policy.`,
    options: {
      account: { type: 'string' },
      name: { type: 'string' },
      'issuer-url': { type: 'string' },
      'jwks-url': { type: 'string' },
      'discovery-base': { type: 'string' },
      'max-jwt-lifetime': { type: 'string' },
      'no-check-jti': { type: 'boolean' },
    },
    async call(values, backend) {
      const path = accountPath(values, this.usage);
      const jwksUrl = str(values['jwks-url']);
      const body: Json = {
        name: required(values, 'name', this.usage),
        issuer_url: required(values, 'issuer-url', this.usage),
        jwks: jwksUrl
          ? { type: 'explicit_url', url: jwksUrl }
          : { type: 'discovery', discovery_base: str(values['discovery-base']) ?? null },
        check_jti: values['no-check-jti'] !== true,
      };
      const max = positiveInt(values, 'max-jwt-lifetime');
      if (max !== undefined) body.max_jwt_lifetime_seconds = max;
      const i = await backend.request('POST', `${path}/federation_issuers`, { body });
      return { json: i, text: `Added issuer ${i.id}\n${details(issuerRow(i))}` };
    },
  },

  'federation issuers': {
    summary: "List an account's federation issuers",
    usage: 'Usage: keygate federation issuers --account ID [--include-archived] [--json]',
    options: { account: { type: 'string' }, 'include-archived': { type: 'boolean' } },
    async call(values, backend) {
      const archived = values['include-archived'] === true;
      const page = await backend.request(
        'GET',
        `${accountPath(values, this.usage)}/federation_issuers?limit=1000&include_archived=${archived}`,
      );
      const rows = (page.data as Json[]).map(issuerRow);
      return { json: page, text: rows.length ? table(rows) : 'No federation issuers.' };
    },
  },

  'federation archive-issuer': archive(
    'issuers',
    'fdis',
    'Archive a federation issuer (after its rules)',
    (i) => `Archived issuer ${i.id}.`,
  ),

  'federation add-rule': {
    summary: "Let an issuer's matching workloads act as a service account",
    usage: `Usage: keygate federation add-rule --account ID --name NAME --issuer fdis_… --service-account svac_…
          [--subject SUBJECT[*]] [--claim NAME=VALUE]... [--audience AUD] [--lifetime SECONDS] [--json]

--subject matches the assertion's sub exactly, or as a prefix when it ends with *; each --claim
must equal a top-level string claim; --audience must be in aud (default: keygate). A rule needs a
--subject or a --claim. Tokens live --lifetime seconds (60 to 86400, default 3600), never past the
assertion.`,
    options: {
      account: { type: 'string' },
      name: { type: 'string' },
      issuer: { type: 'string' },
      'service-account': { type: 'string' },
      ...matchOptions,
    },
    async call(values, backend) {
      const body: Json = {
        name: required(values, 'name', this.usage),
        issuer_id: required(values, 'issuer', this.usage),
        target: {
          type: 'service_account',
          service_account_id: required(values, 'service-account', this.usage),
        },
        match: match(values) ?? {},
      };
      const lifetime = positiveInt(values, 'lifetime');
      if (lifetime !== undefined) body.token_lifetime_seconds = lifetime;
      const r = await backend.request('POST', `${accountPath(values, this.usage)}/federation_rules`, {
        body,
      });
      return { json: r, text: `Added rule ${r.id}\n${details(ruleRow(r))}` };
    },
  },

  'federation rules': {
    summary: "List an account's federation rules",
    usage: 'Usage: keygate federation rules --account ID [--issuer fdis_…] [--include-archived] [--json]',
    options: {
      account: { type: 'string' },
      issuer: { type: 'string' },
      'include-archived': { type: 'boolean' },
    },
    async call(values, backend) {
      const q = new URLSearchParams({
        limit: '1000',
        include_archived: String(values['include-archived'] === true),
      });
      if (str(values.issuer)) q.set('issuer_id', str(values.issuer)!);
      const page = await backend.request('GET', `${accountPath(values, this.usage)}/federation_rules?${q}`);
      const rows = (page.data as Json[]).map(ruleRow);
      return { json: page, text: rows.length ? table(rows) : 'No federation rules.' };
    },
  },

  'federation update-rule': {
    summary: 'Change a federation rule; a new match, or --disable, ends the tokens it minted',
    usage: `Usage: keygate federation update-rule --account ID fdrl_… [--subject S] [--claim NAME=VALUE]...
          [--audience AUD] [--lifetime SECONDS] [--enable | --disable] [--json]

A new --subject, --claim or --audience replaces the whole match.`,
    options: {
      account: { type: 'string' },
      id: { type: 'string' },
      enable: { type: 'boolean' },
      disable: { type: 'boolean' },
      ...matchOptions,
    },
    positional: 'id',
    async call(values, backend) {
      const id = enc(required(values, 'id', this.usage));
      const body: Json = {};
      const m = match(values);
      if (m) body.match = m;
      const lifetime = positiveInt(values, 'lifetime');
      if (lifetime !== undefined) body.token_lifetime_seconds = lifetime;
      if (values.enable && values.disable) throw new CliError('--enable or --disable, not both.', EXIT.usage);
      if (values.enable || values.disable) body.enabled = values.enable === true;
      const r = await backend.request('POST', `${accountPath(values, this.usage)}/federation_rules/${id}`, {
        body,
      });
      return { json: r, text: `Updated rule ${r.id}\n${details(ruleRow(r))}` };
    },
  },

  'federation archive-rule': archive(
    'rules',
    'fdrl',
    'Archive a federation rule: exchange stops and its tokens end',
    (r) => `Archived rule ${r.id}; the tokens it minted no longer work.`,
  ),
};
