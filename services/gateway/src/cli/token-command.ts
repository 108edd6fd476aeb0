import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as wait } from 'node:timers/promises';
import { EXIT } from './backend';
import { str, type Command, type Values } from './command';
import { printable, terminalText } from './output';

const USAGE = `Usage: keygate token [--url GATEWAY_URL] [--account ACCOUNT_ID]

Prints a short-lived Keygate member token on stdout, for Claude Code's \`apiKeyHelper\`.
The first run signs you in through your company's identity provider (the OAuth 2.0 device
flow: open the address it prints and enter the code); later runs renew the token silently
with the refresh token kept in $XDG_CONFIG_HOME/keygate/credentials.json (mode 0600), which
changes on every renewal.

  --url      the gateway (default: ANTHROPIC_BASE_URL, as Claude Code passes it)
  --account  your Keygate account id (default: KEYGATE_ACCOUNT)`;

interface Saved {
  refresh_token: string;
  email: string;
  member_id: string;
}

type Answer = { status: number; body: Record<string, any> };

/** The config folder: $XDG_CONFIG_HOME/keygate, else ~/.config/keygate (XDG Base Directory spec). */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'keygate');
}

function readSaved(file: string): Record<string, Saved> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, Saved>;
  } catch {
    return {};
  }
}

/** Written whole to a private temporary file, then renamed: never readable by others, never half-written. */
function writeSaved(dir: string, file: string, all: Record<string, Saved>): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

async function post(base: string, path: string, body: unknown): Promise<Answer> {
  const url = new URL(`${base.replace(/\/+$/, '')}/idp/v1${path}`);
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let parsed: Record<string, any> = {};
        try {
          parsed = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

// Every line carries the identity provider's or the gateway's words: shown with controls escaped.
const say = (line: string) => process.stderr.write(`${terminalText(line)}\n`);
const printToken = (token: unknown) => process.stdout.write(`${printable(token)}\n`);
const reason = (a: Answer) => a.body?.error?.message ?? `HTTP ${a.status}`;

async function deviceSignIn(base: string, account: string): Promise<Answer> {
  const start = await post(base, '/device/code', { account_id: account });
  if (start.status !== 200) return start;
  const d = start.body;
  say(`Sign in to Keygate with ${d.provider}:`);
  say(`  open ${d.verification_uri}`);
  say(`  and enter the code ${d.user_code}`);
  if (d.verification_uri_complete) say(`  (or open ${d.verification_uri_complete})`);
  let interval = Number(d.interval) || 5;
  const until = Date.now() + (Number(d.expires_in) || 600) * 1000;
  while (Date.now() < until) {
    // RFC 8628 §3.5: poll no faster than the interval the provider gave.
    await wait(interval * 1000);
    const poll = await post(base, '/device/token', { account_id: account, device_code: d.device_code });
    if (poll.status !== 200 || poll.body.status === 'ok') return poll;
    if (poll.body.interval) interval = Number(poll.body.interval);
  }
  return { status: 400, body: { error: { message: 'the code expired before the sign-in finished' } } };
}

async function run(values: Values): Promise<number> {
  const base = str(values.url) ?? process.env.ANTHROPIC_BASE_URL;
  const account = str(values.account) ?? process.env.KEYGATE_ACCOUNT;
  if (!base || !account) {
    say(
      `keygate token: ${base ? '--account (or KEYGATE_ACCOUNT)' : '--url (or ANTHROPIC_BASE_URL)'} is required.\n\n${USAGE}`,
    );
    return EXIT.usage;
  }
  const dir = configDir();
  const file = join(dir, 'credentials.json');
  const slot = `${base.replace(/\/+$/, '')}#${account}`;
  const all = readSaved(file);
  const saved = all[slot];
  try {
    if (saved) {
      const renewed = await post(base, '/token', { refresh_token: saved.refresh_token });
      if (renewed.status === 200) {
        // The refresh token rotates on every renewal: the one just used is spent.
        if (typeof renewed.body.refresh_token === 'string') {
          all[slot] = { ...saved, refresh_token: renewed.body.refresh_token };
          writeSaved(dir, file, all);
        }
        printToken(renewed.body.token);
        return EXIT.ok;
      }
      if (renewed.status !== 401) {
        say(`keygate token: could not renew the token: ${reason(renewed)}`);
        return EXIT.failure;
      }
      // The sign-in ended (disabled at the provider, removed by an admin): forget it, say so.
      delete all[slot];
      writeSaved(dir, file, all);
      say(`keygate token: ${reason(renewed)}`);
      return EXIT.failure;
    }
    const signed = await deviceSignIn(base, account);
    if (signed.status !== 200) {
      say(`keygate token: sign-in failed: ${reason(signed)}`);
      return EXIT.failure;
    }
    const b = signed.body;
    all[slot] = { refresh_token: b.refresh_token, email: b.email, member_id: b.member_id };
    writeSaved(dir, file, all);
    say(`Signed in as ${b.email}.`);
    printToken(b.token);
    return EXIT.ok;
  } catch (err) {
    say(`keygate token: cannot reach the gateway at ${base}: ${(err as Error).message}`);
    return EXIT.failure;
  }
}

export const tokenCommand: Command = {
  summary:
    "Print a short-lived member token (Claude Code's apiKeyHelper), signing in through the identity provider",
  usage: USAGE,
  options: { url: { type: 'string' }, account: { type: 'string' } },
  run,
};
