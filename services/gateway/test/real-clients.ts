import { startEmulator, type Emulator, type LedgerEntry, type ReceivedRequest } from '@keygate/emulator';
import { afterAll, beforeAll, expect } from 'vitest';
import { expectedColumns, PROVIDER_KEY, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

/** An emulator for clients pointed straight at "the provider"; it takes Bearer too, as Claude Code may send it. */
export function startDirectEmulator(): Promise<Emulator> {
  return startEmulator({ port: 0, apiKey: PROVIDER_KEY, acceptBearer: true });
}

/** For one test file: a stack (gateway, its provider emulator, an account) and a direct emulator. */
export function useClientStacks(): { readonly stack: Stack; readonly direct: Emulator } {
  const state = {} as { stack: Stack; direct: Emulator };
  beforeAll(async () => {
    [state.stack, state.direct] = await Promise.all([startStack(), startDirectEmulator()]);
  });
  afterAll(async () => {
    await Promise.all([state.stack?.close(), state.direct?.close()]);
  });
  return state;
}

/**
 * What the provider sees of a request that a proxy must leave alone. The body is read as
 * latin1, one character per byte: equal strings are equal bytes, and a diff stays readable.
 */
export function providerView(r: ReceivedRequest) {
  return {
    method: r.method,
    path: r.path,
    query: r.query,
    anthropicVersion: r.headers['anthropic-version'] ?? null,
    anthropicBeta: r.headers['anthropic-beta'] ?? null,
    body: r.body.toString('latin1'),
  };
}

export interface Captured<T> {
  result: T;
  requests: ReceivedRequest[];
}

/** Runs `run` while recording every request `emulator` answers. */
export async function captured<T>(emulator: Emulator, run: () => Promise<T>): Promise<Captured<T>> {
  const requests: ReceivedRequest[] = [];
  emulator.onRequest = (r) => requests.push(r);
  try {
    return { result: await run(), requests };
  } finally {
    emulator.onRequest = null;
  }
}

/** The same client calls, made straight to the provider and through the gateway, compared pairwise in order. */
export function expectSameProviderRequests(direct: ReceivedRequest[], gateway: ReceivedRequest[]): void {
  expect(gateway.length, 'requests that reached the provider').toBeGreaterThan(0);
  expect(gateway.map(providerView)).toEqual(direct.map(providerView));
}

/**
 * Each request the provider answered for the gateway has exactly one call row, whose usage is
 * the provider's own ledger entry, field for field. Returns the rows, in request order.
 */
export async function expectUsageMatchesLedger(
  stack: Stack,
  provider: Emulator,
  requests: ReceivedRequest[],
): Promise<Record<string, any>[]> {
  const entries: LedgerEntry[] = [];
  for (const r of requests)
    entries.push(await provider.ledger.waitFor((e) => e.requestId === r.requestId, 5_000));
  const rows = await callRows(
    stack,
    entries.map((e) => e.requestId),
  );
  entries.forEach((entry, i) => {
    const row = rows[i]!;
    expect(row.status).toBe(entry.status);
    if (entry.usage) {
      expect(row.usage).toEqual(entry.usage);
      expect(row).toMatchObject(expectedColumns(entry.usage));
    }
  });
  return rows;
}

/** The call rows for these upstream request ids, in the same order; waits for the writer. */
async function callRows(stack: Stack, upstreamIds: string[]): Promise<Record<string, any>[]> {
  let rows: Record<string, any>[][] = [];
  await waitFor(
    async () => {
      const all = await stack.calls();
      rows = upstreamIds.map((id) => all.filter((r) => r.upstream_request_id === id));
      return rows.every((r) => r.length === 1);
    },
    { timeout: 2_000, interval: 20 },
  ).catch(() => {});
  expect(
    rows.map((r) => r.length),
    'one call row per upstream request',
  ).toEqual(upstreamIds.map(() => 1));
  return rows.map((r) => r[0]!);
}

/** The text the emulator answers a messages body with, asked once more without streaming. */
export async function emulatorReplyText(emulator: Emulator, request: ReceivedRequest): Promise<string> {
  const body = { ...JSON.parse(request.body.toString('utf8')), stream: false };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-api-key': emulator.apiKey!,
  };
  for (const name of ['anthropic-version', 'anthropic-beta'])
    if (request.headers[name]) headers[name] = request.headers[name];
  const res = await fetch(`${emulator.url}${request.path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const message = (await res.json()) as { content?: Array<{ type: string; text?: string }> };
  expect(res.status, JSON.stringify(message)).toBe(200);
  return message
    .content!.filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

export interface BothWays<T> {
  straight: T;
  through: T;
  /** The gateway's call rows, one per provider request, in order. */
  rows: Record<string, any>[];
}

/**
 * Makes the same client call straight to `direct` (with the provider key) and through the
 * gateway (with the stack's app key), then checks that the provider saw the same requests and
 * that the gateway recorded the provider's usage exactly.
 */
export async function throughBothWays<T>(
  stack: Stack,
  direct: Emulator,
  call: (baseUrl: string, apiKey: string) => Promise<T>,
): Promise<BothWays<T>> {
  const straight = await captured(direct, () => call(direct.url, PROVIDER_KEY));
  const through = await captured(stack.emulator, () => call(stack.gateway.url, stack.appKey));
  expectSameProviderRequests(straight.requests, through.requests);
  const rows = await expectUsageMatchesLedger(stack, stack.emulator, through.requests);
  return { straight: straight.result, through: through.result, rows };
}
