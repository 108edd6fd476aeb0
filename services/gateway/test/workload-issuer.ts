import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One signing key of the local issuer, and the JWK it publishes. */
interface SigningKey {
  alg: 'RS256' | 'ES256';
  kid: string;
  privateKey: CryptoKey;
  jwk: Record<string, unknown>;
}

export interface LocalIssuer {
  /** The `iss` of tokens shaped like GitHub Actions' (discovery at its /.well-known/openid-configuration). */
  github: string;
  /** The `iss` of tokens shaped like a Kubernetes cluster's (key set at `kubernetesJwks`). */
  kubernetes: string;
  kubernetesJwks: string;
  /** Signs `claims` for `iss` with its current key (or another key for a forged signature). */
  sign(
    iss: string,
    claims: JWTPayload,
    opts?: { key?: SigningKey; header?: Record<string, unknown> },
  ): Promise<string>;
  /** A key the issuer does not publish. */
  stranger(alg: 'RS256' | 'ES256', kid: string): Promise<SigningKey>;
  /** Replaces the GitHub-like issuer's key with a new one (new kid), as a rotation. */
  rotateGithub(): Promise<void>;
  /** Key-set fetches so far, by issuer. */
  fetches: { github: number; kubernetes: number; missing: number };
  /** A key-set URL that answers 404. */
  missingJwks: string;
  close(): Promise<void>;
}

async function newKey(alg: 'RS256' | 'ES256', kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * A JWT issuer on loopback, like the two workload issuers Keygate must take: a GitHub Actions-like
 * one found through OIDC discovery (RS256) and a Kubernetes-like one with a fixed key-set URL (ES256).
 */
export async function startLocalIssuer(): Promise<LocalIssuer> {
  let github = await newKey('RS256', 'gh-1');
  const k8s = await newKey('ES256', 'k8s-1');
  const fetches = { github: 0, kubernetes: 0, missing: 0 };
  const server = createServer((req, res) => {
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/gha/.well-known/openid-configuration')
      return json({ issuer: `${base}/gha`, jwks_uri: `${base}/gha/jwks` });
    if (req.url === '/gha/jwks') {
      fetches.github++;
      return json({ keys: [github.jwk] });
    }
    if (req.url === '/k8s/openid/v1/jwks') {
      fetches.kubernetes++;
      return json({ keys: [k8s.jwk] });
    }
    fetches.missing++;
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer: LocalIssuer = {
    github: `${base}/gha`,
    kubernetes: `${base}/k8s`,
    kubernetesJwks: `${base}/k8s/openid/v1/jwks`,
    missingJwks: `${base}/gone/jwks`,
    fetches,
    async sign(iss, claims, opts = {}) {
      const key = opts.key ?? (iss === issuer.kubernetes ? k8s : github);
      return new SignJWT({ iss, ...claims })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...opts.header })
        .sign(key.privateKey);
    },
    stranger: newKey,
    async rotateGithub() {
      github = await newKey('RS256', `gh-${Date.now()}`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return issuer;
}

/** Claims shaped like a GitHub Actions OIDC token's (docs.github.com, "About security hardening with OpenID Connect", read 2026-11-29). */
export function githubClaims(now: number, over: JWTPayload = {}): JWTPayload {
  const iat = Math.floor(now / 1000);
  return {
    sub: 'repo:acme/app:ref:refs/heads/main',
    aud: 'https://keygate.test',
    repository: 'acme/app',
    repository_owner: 'acme',
    repository_id: '123456',
    ref: 'refs/heads/main',
    workflow: 'ci',
    event_name: 'push',
    run_id: '42',
    jti: crypto.randomUUID(),
    iat,
    nbf: iat,
    exp: iat + 300,
    ...over,
  };
}

/** Claims shaped like a projected Kubernetes service-account token's (kubernetes.io, "Service account tokens", read 2026-11-29). */
export function kubernetesClaims(now: number, over: JWTPayload = {}): JWTPayload {
  const iat = Math.floor(now / 1000);
  return {
    sub: 'system:serviceaccount:ci:builder',
    aud: ['keygate'],
    'kubernetes.io': {
      namespace: 'ci',
      pod: { name: 'builder-7d9f', uid: crypto.randomUUID() },
      serviceaccount: { name: 'builder', uid: crypto.randomUUID() },
    },
    iat,
    nbf: iat,
    exp: iat + 600,
    ...over,
  };
}
