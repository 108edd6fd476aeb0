import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config';
import { createLogger } from '../lib/logger';
import { startGateway } from '../server';
import { migrate } from '../store';
import { openRuntime } from '../runtime';
import { CliError, type Backend, type Json } from './backend';
import { details } from './output';

type Values = Record<string, string | boolean | undefined>;

export interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** Commands that manage the process or the database themselves. */
  run?(values: Values, config: Config): Promise<number>;
  /** Commands answered by the operator API. */
  call?(values: Values, backend: Backend): Promise<{ json: unknown; text: string }>;
}

const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);

function required(values: Values, name: string, usage: string): string {
  const v = str(values[name]);
  if (!v) throw new CliError(`--${name} is required.\n\n${usage}`, 2);
  return v;
}

export const commands: Record<string, Command> = {
  serve: {
    summary: 'Run the gateway (embedded database unless DATABASE_URL is set)',
    usage: 'Usage: keygate serve\n\nServes the gateway on $HOST:$PORT (default 127.0.0.1:8080) until interrupted.',
    options: {},
    async run(_values, config) {
      const logger = createLogger(config.logLevel);
      const gateway = await startGateway(config, { logger });
      logger.info('keygate listening', {
        url: gateway.url,
        database: config.databaseUrl ? 'postgresql' : `embedded (${config.dataDir})`,
        upstream: config.upstreamUrl,
      });
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      logger.info('shutting down; writing the call log');
      await gateway.close();
      return 0;
    },
  },

  migrate: {
    summary: 'Apply database migrations and exit',
    usage: 'Usage: keygate migrate',
    options: {},
    async run(_values, config) {
      const rt = await openRuntime(config);
      const applied = await migrate(rt.store.db.sql);
      await rt.close();
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
      return 0;
    },
  },

  'account create': {
    summary: 'Create an account on a plan (starts its trial)',
    usage: `Usage: keygate account create --name NAME --plan solo|team|scale [--provider-key-env VAR] [--admin-email EMAIL] [--json]

  --provider-key-env VAR  read the account's Anthropic key from $VAR (never pass it as an argument)
  --admin-email EMAIL     also create the first admin member and an admin key (shown once)`,
    options: { name: { type: 'string' }, plan: { type: 'string' }, 'provider-key-env': { type: 'string' }, 'admin-email': { type: 'string' } },
    async call(values, backend) {
      const usage = this.usage;
      const body: Json = { name: required(values, 'name', usage), plan: required(values, 'plan', usage) };
      const envName = str(values['provider-key-env']);
      if (envName) {
        const key = process.env[envName];
        if (!key) throw new CliError(`--provider-key-env: $${envName} is not set.`, 2);
        body.provider_key = key;
      }
      if (str(values['admin-email'])) body.admin_email = str(values['admin-email']);
      const account = await backend.request('POST', '/accounts', body);
      const { admin, ...shown } = account;
      let text = `Created account ${account.id} (via ${backend.via})\n${details(shown)}`;
      if (admin) text += `\n\nAdmin key (shown once, store it now):\n  ${admin.key.key}`;
      return { json: account, text };
    },
  },

  'key create': {
    summary: 'Create an app key (or --test / --admin key) for an account',
    usage: `Usage: keygate key create --account ID [--member ID] [--app A] [--env E] [--name N] [--test | --admin] [--json]

The secret is printed once; only its hash is stored.`,
    options: {
      account: { type: 'string' }, member: { type: 'string' }, app: { type: 'string' }, env: { type: 'string' },
      name: { type: 'string' }, test: { type: 'boolean' }, admin: { type: 'boolean' },
    },
    async call(values, backend) {
      const account = required(values, 'account', this.usage);
      if (values.test && values.admin) throw new CliError('Choose one of --test and --admin.', 2);
      const body: Json = { kind: values.admin ? 'admin' : values.test ? 'test' : 'live' };
      for (const [flag, field] of [['member', 'member_id'], ['app', 'app'], ['env', 'environment'], ['name', 'name']] as const) {
        if (str(values[flag])) body[field] = str(values[flag]);
      }
      const key = await backend.request('POST', `/accounts/${encodeURIComponent(account)}/keys`, body);
      const { key: secret, ...shown } = key;
      return { json: key, text: `Created key ${key.id}\n${details(shown)}\n\nSecret (shown once, store it now):\n  ${secret}` };
    },
  },
};
