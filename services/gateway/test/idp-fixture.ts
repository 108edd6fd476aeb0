import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { launchBrowser } from './dashboard-browser';
import { startStack, type SeededAccount, type Stack } from './harness';
import { startTestIdp, type TestIdp } from './oidc-provider';

export interface IdpContext {
  stack: Stack;
  idp: TestIdp;
  /** The account that connects the provider, with its admin key. */
  account: SeededAccount;
  browser: Browser;
  /** A private temporary folder, removed afterwards. */
  root: string;
  /** Connects (or changes) the account's identity provider through the account API. */
  connect(body?: Record<string, unknown>): Promise<Response>;
  /** `keygate token` as Claude Code runs it; `onCode` sees the verification URL the first run prints. */
  keygateToken(configHome: string, onCode?: (url: string) => Promise<void>): Promise<TokenRun>;
  /** The person's side of the device flow, in a real browser on the provider's own pages. */
  approveDevice(url: string, login: string): Promise<void>;
  /** "Sign in with Acme SSO" on the dashboard, through the provider's login and consent pages. */
  dashboardSignIn(login: string): Promise<{ context: BrowserContext; page: Page }>;
}

export interface TokenRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const BIN = join(import.meta.dirname, '../bin/keygate.js');

/**
 * A gateway (egress allowed to loopback), a certified OpenID provider on loopback with the test's
 * people, a seeded account and Chromium, started before the file's tests and closed after them.
 */
export function useIdpStack(env: Record<string, string> = {}): IdpContext {
  const ctx = {} as IdpContext;
  beforeAll(async () => {
    ctx.stack = await startStack({ KEYGATE_EGRESS_ALLOW: '127.0.0.1', ...env });
    ctx.idp = await startTestIdp({
      redirectUris: [`${ctx.stack.gateway.url}/dashboard/sign-in/idp/callback`],
      people: {
        alice: { email: 'alice@acme.test', name: 'Alice Example', groups: ['eng', 'claude-users'] },
        mallory: { email: 'mallory@elsewhere.test', name: 'Mallory', groups: ['eng'] },
        carol: { email: 'carol@acme.test', name: 'Carol Example', groups: ['claude-users'] },
        dave: { email: 'dave@acme.test', name: 'Dave Example', groups: ['sales'] },
        ivy: { email: 'ivy@acme.test', name: 'Ivy Example', groups: [] },
      },
    });
    ctx.account = await ctx.stack.seedAccount();
    ctx.browser = await launchBrowser();
    ctx.root = mkdtempSync(join(tmpdir(), 'keygate-idp-'));
  }, 60_000);
  afterAll(async () => {
    await ctx.browser?.close();
    await ctx.idp?.close();
    await ctx.stack?.close();
    if (ctx.root) rmSync(ctx.root, { recursive: true, force: true });
  });
  ctx.connect = (body = {}) =>
    fetch(`${ctx.stack.gateway.url}/v1/organizations/identity_provider`, {
      method: 'POST',
      headers: { 'x-api-key': ctx.account.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Acme SSO',
        issuer: ctx.idp.issuer,
        client_id: ctx.idp.clientId,
        client_secret: ctx.idp.clientSecret,
        allowed_domains: ['acme.test'],
        ...body,
      }),
    });
  ctx.keygateToken = (configHome, onCode) => {
    const child = spawn(
      process.execPath,
      [BIN, 'token', '--url', ctx.stack.gateway.url, '--account', ctx.account.id],
      {
        env: { PATH: process.env.PATH, HOME: configHome, XDG_CONFIG_HOME: join(configHome, '.config') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    let started = false;
    const user: Promise<void>[] = [];
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /\(or open (\S+)\)/.exec(stderr);
      if (m && onCode && !started) {
        started = true;
        user.push(onCode(m[1]!));
      }
    });
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', async (code) => {
        await Promise.all(user);
        resolve({ code, stdout, stderr });
      });
    });
  };
  ctx.approveDevice = async (url, login) => {
    const page = await ctx.browser.newPage();
    try {
      await page.goto(url);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.locator('input[name=login]').fill(login);
      await page.locator('input[name=password]').fill('any password');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByText('Sign-in Success').waitFor();
    } finally {
      await page.close();
    }
  };
  ctx.dashboardSignIn = async (login) => {
    const context = await ctx.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${ctx.stack.gateway.url}/dashboard/sign-in?account=${ctx.account.id}`);
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForLoadState('domcontentloaded');
    return { context, page };
  };
  return ctx;
}
