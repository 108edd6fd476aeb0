import { importPKCS8, SignJWT } from 'jose';
import type { Dispatcher } from 'undici';
import { z } from 'zod';

/**
 * Google's OAuth 2.0 flow for service accounts (read 2026-11-29:
 * https://developers.google.com/identity/protocols/oauth2/service-account#makingrequest, as
 * Google's own auth libraries cite it): an RS256 JWT signed with the service account's private
 * key (`iss` its client_email, `aud` its token_uri, `scope`, `iat`, `exp` at most an hour
 * later) is posted to the token_uri as `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`
 * and `assertion`; the answer is `{access_token, expires_in, token_type: "Bearer"}`.
 */
export const GOOGLE_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** A token is used until this long before its expiry, so none expires on its way. */
const MARGIN_MS = 60_000;

const ServiceAccount = z.object({
  type: z.literal('service_account', { error: 'type: must be "service_account"' }),
  client_email: z.string().min(3).max(320),
  private_key: z.string().min(64).max(8192),
  private_key_id: z.string().max(128).optional(),
  token_uri: z.url({ protocol: /^https?$/, error: 'token_uri: must be an http:// or https:// URL' }),
});
export type ServiceAccount = z.infer<typeof ServiceAccount>;

/** The fields of a service-account JSON key that minting uses; a message naming the first wrong one. */
export function parseServiceAccount(text: string): ServiceAccount | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'credential: a Google service-account key is JSON (the file Google Cloud gives you).';
  }
  const parsed = ServiceAccount.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    return `credential: ${issue.message.startsWith(field) ? issue.message : `${field}: ${issue.message}`}`;
  }
  return parsed.data;
}

/** Whether the private key is a PKCS#8 RSA key jose can sign RS256 with. */
export async function checkPrivateKey(sa: ServiceAccount): Promise<string | null> {
  try {
    await importPKCS8(sa.private_key, 'RS256');
    return null;
  } catch {
    return 'credential: private_key is not a PEM PKCS#8 RSA private key.';
  }
}

/** Minting failed; the message names the service account and the token endpoint's answer, never the key. */
export class TokenMintError extends Error {
  override name = 'TokenMintError';
}

/**
 * Access tokens of one service account: minted at the first call, kept until shortly before they
 * expire, minted once at a time however many calls wait, and dropped when the upstream refuses one.
 */
export class GoogleTokenSource {
  /** The key, or why it cannot mint (checked when the upstream was added, so only a damaged row). */
  readonly #sa: ServiceAccount | string;
  readonly #dispatcher: Dispatcher;
  readonly #now: () => number;
  #token: { value: string; until: number } | null = null;
  #minting: Promise<string> | null = null;

  constructor(sa: ServiceAccount | string, dispatcher: Dispatcher, now: () => number = Date.now) {
    this.#sa = sa;
    this.#dispatcher = dispatcher;
    this.#now = now;
  }

  token(): Promise<string> | string {
    const t = this.#token;
    if (t && this.#now() < t.until) return t.value;
    this.#minting ??= this.#mint().finally(() => (this.#minting = null));
    return this.#minting;
  }

  /** The upstream refused this token (401): the next call mints a new one. */
  drop(token: string): void {
    if (this.#token?.value === token) this.#token = null;
  }

  async #mint(): Promise<string> {
    const sa = this.#sa;
    if (typeof sa === 'string') throw new TokenMintError(sa);
    let assertion: string;
    try {
      const key = await importPKCS8(sa.private_key, 'RS256');
      const iat = Math.floor(this.#now() / 1000);
      assertion = await new SignJWT({ scope: GOOGLE_SCOPE })
        .setProtectedHeader({
          alg: 'RS256',
          typ: 'JWT',
          ...(sa.private_key_id ? { kid: sa.private_key_id } : {}),
        })
        .setIssuer(sa.client_email)
        .setAudience(sa.token_uri)
        .setIssuedAt(iat)
        .setExpirationTime(iat + 3600)
        .sign(key);
    } catch {
      throw new TokenMintError(`the private key of ${sa.client_email} cannot sign (not a PKCS#8 RSA key)`);
    }
    const url = new URL(sa.token_uri);
    const res = await this.#dispatcher
      .request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: GRANT, assertion }).toString(),
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      })
      .catch((err: Error & { code?: string }) => {
        throw new TokenMintError(`${sa.token_uri} could not be reached (${err.code ?? 'connection failed'})`);
      });
    const body = safeJson(await bounded(res.body, 64 * 1024));
    if (res.statusCode !== 200 || typeof body?.access_token !== 'string') {
      // Google answers `{error, error_description}`; both are short and carry no secret.
      const why = [body?.error, body?.error_description].filter((s) => typeof s === 'string').join(': ');
      throw new TokenMintError(
        `${sa.token_uri} refused ${sa.client_email} (${res.statusCode}${why ? ` ${why.slice(0, 200)}` : ''})`,
      );
    }
    const ttlMs = (typeof body.expires_in === 'number' ? body.expires_in : 3600) * 1000;
    this.#token = { value: body.access_token, until: this.#now() + Math.max(ttlMs - MARGIN_MS, ttlMs / 2) };
    return body.access_token;
  }
}

/** A token answer is a few hundred bytes; more is not read. */
async function bounded(body: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      return '';
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function safeJson(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
