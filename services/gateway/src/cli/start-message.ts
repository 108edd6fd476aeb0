import { join } from 'node:path';
import type { Config } from '../config';

/** What `keygate serve` knows once it listens: where, and whether anyone has an account yet. */
export interface Started {
  /** The listening address (`http://127.0.0.1:8080`). */
  url: string;
  /** Whether the database holds any account. */
  hasAccounts: boolean;
}

const ANY_ADDRESS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The lines a person reads on stdout when the gateway has started (the logs are JSON on
 * stderr): where the dashboard is, how to sign in, and the next command to run.
 */
export function startMessage(
  config: Pick<Config, 'publicUrl' | 'operatorToken' | 'dataDir' | 'databaseUrl' | 'billingEnforced'>,
  started: Started,
): string {
  const listening = new URL(started.url);
  // Bound to every address: a browser on this machine reaches it on loopback.
  if (ANY_ADDRESS.has(listening.hostname)) listening.hostname = '127.0.0.1';
  const base = config.publicUrl ?? listening.origin;
  const token = config.operatorToken
    ? 'the operator token (KEYGATE_OPERATOR_TOKEN)'
    : config.databaseUrl
      ? 'an admin key'
      : `the operator token in ${join(config.dataDir, 'operator-token')}`;
  const lines = [
    `Keygate is running at ${base}`,
    `  Dashboard  ${base}/dashboard  (sign in with an admin key, or with ${token})`,
    `  API docs   ${base}/docs`,
    '',
  ];
  if (started.hasAccounts) {
    lines.push(
      'Next: point an app or Claude Code at it with an app key:',
      `  ANTHROPIC_BASE_URL=${base} ANTHROPIC_AUTH_TOKEN=kg_live_… claude`,
      '  (new key: pnpm keygate key create --account acct_… --member you@example.com)',
    );
  } else {
    lines.push(
      'Next, in another terminal: create an account with its provider key and first admin:',
      '  export ANTHROPIC_API_KEY=sk-ant-…',
      '  pnpm keygate account create --name "My team" --plan team --provider-key-env ANTHROPIC_API_KEY \\',
      '    --admin-email you@example.com',
      'No provider key yet? Leave out --provider-key-env, then make a test key, answered by the',
      "built-in emulator: pnpm keygate key create --account acct_… --test (the README's offline tour).",
      config.billingEnforced
        ? "Accounts start on their plan's free trial; for your own team, start with KEYGATE_BILLING=off."
        : 'Billing is off (KEYGATE_BILLING=off): accounts never run out of trial.',
    );
  }
  lines.push('Stop with Ctrl-C (calls in flight finish first).');
  return `${lines.join('\n')}\n`;
}
