import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLAUDE_BIN, freshHome } from './claude-code';
import { api } from './harness';
import type { IdpContext } from './idp-fixture';
import { Terminal } from './kit/terminal';
import { waitFor } from './kit/wait';

/** What a sign-in test sets up on the account: the provider, a group's model policy, the admin's env. */
export async function prepareAccount(ctx: IdpContext, env: Record<string, string>): Promise<void> {
  const { stack, account } = ctx;
  const admin = (path: string, body: object) =>
    api(stack.gateway.url, `/v1/organizations${path}`, { key: account.adminKey, body });
  const connected = await ctx.connect();
  if (connected.status !== 200) throw new Error(`connect: ${connected.status} ${await connected.text()}`);
  const group = (await admin('/rbac_groups', { name: 'Engineering', idp_group: 'eng' })).body;
  const policy = await admin('/model_policies', {
    scope: { type: 'rbac_group', rbac_group_id: group.id },
    allowed_models: ['claude-opus-*', 'claude-haiku-*'],
    max_tokens: null,
  });
  if (policy.status !== 200) throw new Error(`policy: ${JSON.stringify(policy.body)}`);
  const set = await admin('/claude_code_env', { env });
  if (set.status !== 200) throw new Error(`env: ${JSON.stringify(set.body)}`);
}

/** The base URL a team lead gives members: `{gateway}/claude/{account id}`. */
export const baseFor = (ctx: IdpContext) => `${ctx.stack.gateway.url}/claude/${ctx.account.id}`;

/** What Claude Code keeps of its gateway sign-in (~/.claude/.credentials.json on Linux). */
export function heldSignIn(home: string): { url: string; jwt: string; idpRefreshToken?: string } | null {
  try {
    return (
      JSON.parse(readFileSync(join(home, '.claude/.credentials.json'), 'utf8')).enterpriseGateway ?? null
    );
  } catch {
    return null;
  }
}

/**
 * A fresh home for Claude Code, told the gateway's base URL the way a team lead tells members
 * (`forceLoginMethod: "gateway"` and `forceLoginGatewayUrl` in settings).
 */
export function prepareHome(home: string, base: string): void {
  freshHome(home);
  const seeded = JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8'));
  writeFileSync(
    join(home, '.claude.json'),
    JSON.stringify({
      ...seeded,
      hasCompletedOnboarding: true,
      theme: 'dark',
      projects: { [home]: { hasTrustDialogAccepted: true } },
    }),
  );
  mkdirSync(join(home, '.claude'), { recursive: true });
  writeFileSync(
    join(home, '.claude/settings.json'),
    JSON.stringify({ forceLoginMethod: 'gateway', forceLoginGatewayUrl: base }),
  );
}

/**
 * Claude Code in a pseudo-terminal in `home`, with a `BROWSER` that records the page it is asked
 * to open, so the test plays the person's browser. Traffic not for loopback goes to a closed port.
 */
export function startClaude(home: string, blackholePort: number) {
  const opened = join(home, 'browser-opened.txt');
  const browser = join(home, 'browser.sh');
  writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`);
  chmodSync(browser, 0o755);
  const proxy = `http://127.0.0.1:${blackholePort}`;
  const term = Terminal.start([CLAUDE_BIN], home, {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    TERM: 'xterm-256color',
    BROWSER: browser,
    HTTPS_PROXY: proxy,
    HTTP_PROXY: proxy,
    NO_PROXY: '127.0.0.1,localhost',
  });
  /** The pages Claude Code asked the browser to open, in order. */
  const pages = () => {
    try {
      return readFileSync(opened, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  return { term, pages };
}

/**
 * `/login`, then answers the screens up to the prompt: the gateway screen (Enter connects), the
 * trust question for a new gateway, the provider's verification page (the person approves it in
 * `approve`), "Press Enter to continue", and the managed settings that need the person's approval.
 * Done when Claude Code holds a new gateway token and shows its prompt (after the approval, when
 * `expectApproval`). Returns the approval screen, if it came.
 */
export async function signIn(
  term: Terminal,
  home: string,
  pages: () => string[],
  approve: (url: string) => Promise<void>,
  expectApproval = false,
): Promise<string | null> {
  const before = heldSignIn(home)?.jwt;
  const opened = pages().length;
  await term.waitFor(/^❯/m);
  term.type('/login');
  await term.waitFor(/❯ \/login/);
  term.keys('Enter');
  let approval: string | null = null;
  let approved = false;
  await waitFor(
    async () => {
      const s = term.screen();
      if (/\[exited \d+\]/.test(s)) throw new Error('Claude Code exited');
      if (/Enter to connect/.test(s)) term.keys('Enter');
      else if (/❯ No, cancel login/.test(s)) term.keys('Up');
      else if (/❯ Yes, trust this gateway/.test(s)) term.keys('Enter');
      else if (/Managed settings require approval/.test(s)) {
        approval = s;
        if (/❯ (\d\. )?Yes, I trust these settings/.test(s)) term.keys('Enter');
        else term.keys('Down');
      } else if (/Press Enter to continue/.test(s)) term.keys('Enter');
      else if (!approved && pages().length > opened) {
        approved = true;
        await approve(pages()[opened]!);
      } else if (
        approved &&
        (approval !== null || !expectApproval) &&
        heldSignIn(home)?.jwt !== before &&
        /Cloud gateway/.test(s) &&
        /^❯\s*$/m.test(s)
      )
        return true;
      return false;
    },
    { timeout: 90_000, interval: 300, what: 'the sign-in to finish' },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; the screen shows:\n${term.screen()}`);
  });
  return approval;
}
