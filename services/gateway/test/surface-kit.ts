import Anthropic from '@anthropic-ai/sdk';
import { addMember } from '../src/accounts/members';
import { PROVIDER_KEY, startStack, type Stack } from './harness';

export interface Seat {
  memberId: string;
  key: string;
  keyId: string;
  client: Anthropic;
}

export interface SurfaceStack {
  stack: Stack;
  /** The official SDK straight at the emulator, with the provider key. */
  direct: Anthropic;
  admin: Seat;
  /** An admin key of the admin member: the account API and the dashboard. */
  adminKey: string;
  alice: Seat;
  bob: Seat;
}

/** A gateway with three members (an admin, two developers), each with a live key and an SDK client. */
export async function startSurfaceStack(env: Record<string, string> = {}): Promise<SurfaceStack> {
  const stack = await startStack(env);
  const scope = { accountId: stack.account.id, actor: 'test' };
  const seat = async (name: string, role: 'admin' | 'developer'): Promise<Seat> => {
    const member = await addMember(stack.deps as never, scope, { email: `${name}@example.com`, role });
    const key = await stack.newKey({ memberId: member.id });
    return {
      memberId: member.id,
      key: key.secret,
      keyId: key.id,
      client: new Anthropic({ baseURL: stack.gateway.url, apiKey: key.secret, maxRetries: 0 }),
    };
  };
  const admin = await seat('admin', 'admin');
  return {
    stack,
    adminKey: (await stack.newKey({ kind: 'admin', memberId: admin.memberId })).secret,
    direct: new Anthropic({
      baseURL: stack.emulator.url,
      apiKey: PROVIDER_KEY,
      defaultHeaders: { 'x-api-key': PROVIDER_KEY },
      maxRetries: 0,
    }),
    admin,
    alice: await seat('alice', 'developer'),
    bob: await seat('bob', 'developer'),
  };
}

/** The status and error body of a call expected to fail. */
export async function failure(
  p: Promise<unknown>,
): Promise<{ status: number; type: string; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status?: number; error?: { error?: { type?: string; message?: string } } };
    return {
      status: e.status ?? 0,
      type: e.error?.error?.type ?? '',
      message: e.error?.error?.message ?? '',
    };
  }
  throw new Error('expected the call to fail');
}
