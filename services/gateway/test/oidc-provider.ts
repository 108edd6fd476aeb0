import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error the package ships no types (its own are in @types/oidc-provider, not needed here)
import Provider from 'oidc-provider';

export interface Person {
  email: string;
  name: string;
  groups: string[];
  disabled?: boolean;
  /** Claims that replace the defaults (`email_verified: undefined` leaves it out). */
  claims?: Record<string, unknown>;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** People by login (the subject); set `disabled` to take one away. */
  people: Map<string, Person>;
  /** Every request the provider received, as `METHOD /path`, in order. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * A certified OpenID Provider (the `oidc-provider` package) on loopback, as a company's
 * identity provider: authorization code with PKCE, the device authorization grant, refresh
 * tokens, and accounts the test can disable (`findAccount` then knows them no more, so the
 * provider refuses their refresh tokens and userinfo). Its development login pages take any
 * login name, which is the subject looked up in `people`.
 */
export async function startTestIdp(opts: {
  redirectUris: string[];
  people: Record<string, Person>;
}): Promise<TestIdp> {
  const people = new Map(Object.entries(opts.people));
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'keygate';
  const clientSecret = 'idp-client-secret-0123456789abcdefghij';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        client_name: 'Keygate',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        redirect_uris: opts.redirectUris,
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    cookies: { keys: ['test-cookie-key-0123456789'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    scopes: ['openid', 'offline_access', 'email', 'profile'],
    features: {
      deviceFlow: { enabled: true },
      devInteractions: { enabled: true },
      revocation: { enabled: true },
    },
    pkce: { required: () => true },
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    ttl: {
      AccessToken: 600,
      RefreshToken: 86_400,
      DeviceCode: 600,
      IdToken: 600,
      Grant: 86_400,
      Session: 86_400,
      Interaction: 600,
    },
    async findAccount(_ctx: unknown, sub: string) {
      const p = people.get(sub);
      if (!p || p.disabled) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: p.email,
          email_verified: true,
          name: p.name,
          groups: p.groups,
          ...p.claims,
        }),
      };
    },
  });
  const requests: string[] = [];
  server.on('request', (req) => requests.push(`${req.method} ${req.url?.split('?')[0]}`));
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    people,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
