import { afterAll, beforeAll, expect } from 'vitest';
import { startStack, type SeededAccount, type Stack } from './harness';

export interface ScimAnswer {
  status: number;
  type: string | null;
  body: any;
}

export interface ScimFixture {
  readonly stack: Stack;
  /** The account the SCIM token belongs to. */
  readonly account: SeededAccount;
  readonly token: string;
  /** One SCIM request with the account's token (or `bearer`). */
  scim(method: string, path: string, body?: unknown, bearer?: string): Promise<ScimAnswer>;
}

/** A gateway and an account with a SCIM token, started before the file's tests and closed after them. */
export function useScimAccount(): ScimFixture {
  const held = {} as { stack: Stack; account: SeededAccount; token: string };
  beforeAll(async () => {
    held.stack = await startStack();
    held.account = await held.stack.seedAccount();
    const res = await fetch(`${held.stack.gateway.url}/v1/organizations/scim_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': held.account.adminKey },
    });
    expect(res.status).toBe(201);
    held.token = ((await res.json()) as any).token;
  }, 60_000);
  afterAll(() => held.stack?.close());
  return {
    get stack() {
      return held.stack;
    },
    get account() {
      return held.account;
    },
    get token() {
      return held.token;
    },
    async scim(method, path, body, bearer = held.token) {
      const res = await fetch(`${held.stack.gateway.url}/scim/v2${path}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/scim+json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        body: text ? JSON.parse(text) : null,
      };
    },
  };
}
