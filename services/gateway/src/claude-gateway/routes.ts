import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { KeyResolver } from '../auth/resolver';
import type { MemberTokens } from '../identity/tokens';
import { presentedCredential } from '../lib/credentials';
import { GatewayError } from '../lib/errors';
import { requestBody } from '../lib/request-body';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import type { ClaudeGatewayQueries } from './claude-gateway-queries';
import { oauthRoutes } from './oauth-routes';
import { managedSettings, matches } from './settings';

/** Where an account's gateway sign-in lives: Claude Code's `{base}` is `{gateway}/claude/{account id}`. */
export const CLAUDE_BASE = '/claude/:account';

export interface ClaudeGatewayDeps {
  resolver: KeyResolver;
  store: { claudeGateway: ClaudeGatewayQueries };
  identity: MemberTokens;
  clock: () => number;
  /** KEYGATE_PUBLIC_URL (else the request's origin): how Claude Code reaches this gateway. */
  publicUrl?: () => string;
}

/** The `{base}` Claude Code was given, as this gateway is reached. */
export function baseOf(c: Context<AppEnv>, publicUrl?: () => string): string {
  const origin = publicUrl?.() || new URL(c.req.url).origin;
  return `${origin.replace(/\/+$/, '')}/claude/${encodeURIComponent(c.req.param('account') ?? '')}`;
}

/**
 * Claude Code's own way in (`/login` to a gateway, Claude Code 2.1.330): discovery, the OAuth
 * endpoints and managed settings, for the account the base names. Its calls, model discovery and
 * telemetry (`{base}/v1/…`) are the gateway's own routes mounted under the same base (app.ts),
 * after `sameAccount` here has refused a credential of another account.
 */
export function claudeGatewayRoutes(deps: ClaudeGatewayDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // RFC 8414 metadata at `{base}/.well-known/oauth-authorization-server`: Claude Code appends the
  // path to the base it was given (not the origin's root) and reads only the two endpoints, which
  // must be same-origin with the base (pleaseai/shunt docs/gateway-protocol.md, read 2026-11-29;
  // Claude Code 2.1.330 seen on the wire the same day).
  app.get('/.well-known/oauth-authorization-server', (c) => {
    const base = baseOf(c, deps.publicUrl);
    return c.json(
      {
        issuer: base,
        device_authorization_endpoint: `${base}/oauth/device_authorization`,
        token_endpoint: `${base}/oauth/token`,
        grant_types_supported: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        token_endpoint_auth_methods_supported: ['none'],
        response_types_supported: [],
        gateway_protocol_version: 1,
      },
      200,
      { 'cache-control': 'no-store' },
    );
  });
  app.route('/', oauthRoutes(deps.identity, deps.clock));

  // A credential presented at one account's base belongs to that account: another's is refused
  // before any route (calls, settings, telemetry) sees it.
  const sameAccount = async function sameAccount(c: Context<AppEnv>, next: () => Promise<void>) {
    const h = c.env?.incoming?.headers;
    const token = h
      ? presentedCredential(h.authorization, h['x-api-key'] as string | undefined)
      : presentedCredential(c.req.header('authorization'), c.req.header('x-api-key'));
    const p = await deps.resolver.resolve(
      token,
      ['live', 'test'],
      c.env?.incoming?.socket?.remoteAddress ?? '',
    );
    if (p.account.id !== c.req.param('account'))
      throw new GatewayError(
        'authentication_error',
        "This credential belongs to another account: sign in again (/login) with your own account's gateway address.",
      );
    c.set('principal', p);
    await next();
  };
  app.use('/v1/*', sameAccount);
  app.use('/managed/*', sameAccount);
  app.use('/keygate/*', sameAccount);

  app.get('/managed/settings', keyAuth<AppEnv>(deps.resolver, ['live', 'test']), async (c) => {
    const principal = c.var.principal;
    const env = await deps.store.claudeGateway.env(principal.account.id);
    const body = managedSettings(principal, baseOf(c, deps.publicUrl), env);
    const headers = { etag: `"${body.checksum}"`, 'cache-control': 'private, no-cache' };
    if (matches(c.req.header('if-none-match'), body.checksum)) return c.body(null, 304, headers);
    return c.json(body, 200, headers);
  });

  // Keygate keeps metrics and logs (the OTLP receiver, mounted under the base too); traces are
  // read and dropped with a 200, since any other answer makes Claude Code log an error per flush.
  app.post(
    '/v1/traces',
    keyAuth<AppEnv>(deps.resolver, ['live', 'test']),
    bodyReader(BODIES.otlp),
    async (c) => {
      await requestBody(c).bytes();
      const protobuf = (c.req.header('content-type') ?? '').includes('protobuf');
      return protobuf
        ? c.body(new Uint8Array(0), 200, { 'content-type': 'application/x-protobuf' })
        : c.json({});
    },
  );
  return app;
}
