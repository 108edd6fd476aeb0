import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
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
}

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
  return ctx;
}
