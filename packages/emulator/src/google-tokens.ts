import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** A Google service account as its cloud knows it: the email and the public half of its key. */
export interface GoogleServiceAccountAuth {
  type: 'google-service-account';
  clientEmail: string;
  /** PEM (SPKI) public key of the service account's key pair. */
  publicKey: string;
  /** `expires_in` of the tokens it mints; Google's are an hour. */
  tokenTtlSeconds?: number;
}

const GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/**
 * Google's token endpoint for service accounts, as Google documents it (OAuth 2.0 for
 * server-to-server applications, read 2026-11-29:
 * https://developers.google.com/identity/protocols/oauth2/service-account#makingrequest): a form
 * post with the jwt-bearer grant and an RS256 assertion whose `iss` is the service account,
 * `aud` the token endpoint, `exp` at most an hour after `iat`; it answers
 * `{access_token, expires_in, token_type}` or `{error, error_description}`. The signature is
 * checked with node:crypto, not with the library the gateway signs with, so the two are independent.
 */
export class GoogleTokens {
  readonly #auth: GoogleServiceAccountAuth;
  readonly #key: KeyObject;
  /** Token → when it stops working (ms). */
  readonly #issued = new Map<string, number>();
  minted = 0;

  constructor(auth: GoogleServiceAccountAuth) {
    this.#auth = auth;
    this.#key = createPublicKey(auth.publicKey);
  }

  answer(res: ServerResponse, tokenUri: string, body: Buffer): void {
    const form = new URLSearchParams(body.toString('utf8'));
    const refusal = this.#check(form, tokenUri);
    res.setHeader('content-type', 'application/json');
    if (refusal) {
      res.writeHead(400);
      return void res.end(JSON.stringify({ error: refusal[0], error_description: refusal[1] }));
    }
    const ttl = this.#auth.tokenTtlSeconds ?? 3600;
    const token = `ya29.emu-${randomBytes(24).toString('base64url')}`;
    this.#issued.set(token, Date.now() + ttl * 1000);
    this.minted += 1;
    res.writeHead(200);
    res.end(JSON.stringify({ access_token: token, expires_in: ttl, token_type: 'Bearer' }));
  }

  accepts(authorization: string | undefined): boolean {
    const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
    const until = this.#issued.get(token);
    return until !== undefined && Date.now() < until;
  }

  expireAll(): void {
    for (const token of this.#issued.keys()) this.#issued.set(token, 0);
  }

  #check(form: URLSearchParams, tokenUri: string): [string, string] | null {
    if (form.get('grant_type') !== GRANT) return ['unsupported_grant_type', 'Invalid grant_type.'];
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return ['invalid_request', 'Invalid JWT.'];
    const [head, payload, signature] = parts as [string, string, string];
    const header = decode(head);
    if (header?.alg !== 'RS256') return ['invalid_grant', 'Invalid JWT: alg must be RS256.'];
    const signed = verify(
      'RSA-SHA256',
      Buffer.from(`${head}.${payload}`),
      this.#key,
      Buffer.from(signature, 'base64url'),
    );
    if (!signed) return ['invalid_grant', 'Invalid JWT Signature.'];
    const claims = decode(payload);
    const now = Math.floor(Date.now() / 1000);
    if (claims?.iss !== this.#auth.clientEmail) return ['invalid_grant', 'Invalid issuer.'];
    if (claims.aud !== tokenUri) return ['invalid_grant', 'Invalid JWT audience.'];
    if (typeof claims.scope !== 'string' || claims.scope === '') return ['invalid_scope', 'No scope.'];
    const { iat, exp } = claims;
    if (
      typeof iat !== 'number' ||
      typeof exp !== 'number' ||
      iat > now + 60 ||
      exp <= now ||
      exp - iat > 3600
    )
      return ['invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes).'];
    return null;
  }
}

function decode(part: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
