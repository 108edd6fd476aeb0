import type { CloudEmulator } from '@keygate/emulator';
import { describe, expect, it } from 'vitest';
import { BUNDLED_CATALOG } from '../src/pricing/catalog/catalog';
import { callCost, figureCounts, formatCents } from '../src/pricing/prices';
import { usageFigures } from '../src/usage/usage';
import { api } from './harness';
import { awsUpstreams, WORKSPACE } from './kit/aws-upstreams';
import { batchRequests } from './kit/batch-requests';
import { handCentsOfUsage, type ProviderUsage } from './kit/published-rates';
import { upstreamSuite } from './kit/upstream-suite';
import { waitFor } from './kit/wait';

/**
 * Message Batches made on an account upstream (issue 31 item 4): the batch lives there, so the
 * follower reads its status and results there alone, with that upstream's own SigV4 signature and
 * workspace, and records each result at the batch price with the upstream named; the client's
 * retrieve, results, cancel and list reach the same upstream whatever the account's order is now;
 * and a batch whose upstream was removed stays open, is sent to no other host, and is recorded
 * once the upstream is restored.
 */
const upstreams = upstreamSuite();
const { suite, op } = upstreams;
const aws = awsUpstreams(upstreams);
const gateway = () => suite.stack.gateway.url;
const sql = () => suite.stack.gateway.store.db.sql;

async function createBatch(n: number, tag: string): Promise<string> {
  const created = await api(gateway(), '/v1/messages/batches', {
    bearer: suite.stack.appKey,
    body: { requests: batchRequests(n, tag) },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id;
}

const batchPaths = (c: CloudEmulator) => c.received.filter((r) => r.path.includes('/v1/messages/batches'));
const batchRow = async (id: string) =>
  (await sql()`select status, results_recorded, upstream_id from batches where id = ${id}`)[0];
const recorded = (id: string) =>
  waitFor(async () => (await batchRow(id))?.status === 'recorded', {
    timeout: 20_000,
    what: `batch ${id} to be recorded`,
  });
const results = (id: string) =>
  fetch(`${gateway()}/v1/messages/batches/${id}/results`, {
    headers: { authorization: `Bearer ${suite.stack.appKey}` },
  });

describe('a batch made on an account upstream', () => {
  it('is followed on that upstream, signed with its own SigV4 credential, and each result recorded at the batch price with the upstream named', async () => {
    const home = await aws.sigv4(300);
    const batchesBefore = suite.stack.emulator.surface.batches.batches.size;
    const id = await createBatch(3, 'sigv4');
    expect(await batchRow(id)).toMatchObject({ status: 'in_progress', upstream_id: home.id });
    await recorded(id);
    expect(await batchRow(id)).toMatchObject({ results_recorded: 3 });

    // Read where it was made: its status and its results, each request signed and in the workspace.
    const seen = batchPaths(home.cloud);
    expect(seen.map((r) => `${r.method} ${r.path}`)).toContain(`GET /v1/messages/batches/${id}/results`);
    expect(seen.every((r) => r.refused === null)).toBe(true);
    expect(seen.every((r) => r.headers.authorization?.startsWith('AWS4-HMAC-SHA256 '))).toBe(true);
    expect(seen.every((r) => r.headers['anthropic-workspace-id'] === WORKSPACE)).toBe(true);
    expect(seen.some((r) => 'x-api-key' in r.headers)).toBe(false);
    // The provider's host (the stack's emulator) saw none of it.
    expect(suite.stack.emulator.surface.batches.batches.size).toBe(batchesBefore);

    const ledger = home.cloud.handler.ledger.entries.filter((e) => e.batchId === id);
    expect(ledger).toHaveLength(3);
    const log = await op(`/requests?group_id=${id}&limit=10`);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(3);
    let cents = 0;
    for (const entry of ledger) {
      const row = log.body.data.find((r: any) => r.upstream_message_id === entry.messageId);
      const at = new Date(row.created_at);
      const price = callCost(
        entry.model,
        figureCounts(usageFigures(entry.usage as never)),
        { at, batch: true },
        BUNDLED_CATALOG,
      ).cents;
      expect(row).toMatchObject({
        endpoint: 'messages.batch',
        upstream: home.id,
        status: 200,
        model: entry.model,
        cost: { currency: 'USD', amount: formatCents(price), unpriced: false },
      });
      cents += price;
    }
    // The upstream's usage at the published list price, by hand; a batch pays half.
    const full = ledger.reduce((sum, e) => sum + handCentsOfUsage(e.model!, e.usage as ProviderUsage), 0);
    expect(cents).toBeGreaterThan(0);
    expect(cents).toBeCloseTo(full / 2, 9);
  });

  it('is retrieved, listed and its results read on that upstream after another takes the first place', async () => {
    const home = await aws.sigv4(300);
    const id = await createBatch(2, 'moved');
    const other = await aws.bearer();
    const order = await op('/upstreams/order', { ids: [other.id, home.id] });
    expect(order.status, JSON.stringify(order.body)).toBe(200);

    const ended = await waitFor(
      async () => {
        const got = await api(gateway(), `/v1/messages/batches/${id}`, { bearer: suite.stack.appKey });
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        return got.body.processing_status === 'ended' && got.body;
      },
      { timeout: 15_000, what: 'the batch to end' },
    );
    expect(ended.results_url).toBe(`${gateway()}/v1/messages/batches/${id}/results`);
    const res = await results(id);
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.custom_id, l.result.type])).toEqual([
      ['moved-0', 'succeeded'],
      ['moved-1', 'succeeded'],
    ]);
    // The key has no member: its list is Keygate's own, each batch read where it lives.
    const listed = await api(gateway(), '/v1/messages/batches', { bearer: suite.stack.appKey });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.find((b: { id: string }) => b.id === id)?.results_url).toBe(ended.results_url);

    expect(batchPaths(other.cloud)).toHaveLength(0);
    const reads = batchPaths(home.cloud).map((r) => `${r.method} ${r.path}`);
    expect(reads).toContain(`GET /v1/messages/batches/${id}/results`);
    expect(batchPaths(home.cloud).every((r) => r.refused === null)).toBe(true);
    // The client's calls are recorded as served by that upstream.
    const calls = await suite.stack.calls();
    const retrieves = calls.filter((c) => c.endpoint === 'GET /v1/messages/batches/{id}');
    expect(retrieves.length).toBeGreaterThan(0);
    expect(retrieves.every((c) => c.upstream === home.id)).toBe(true);
    await recorded(id);
  });

  it('whose upstream was removed stays open and is sent nowhere else; restored, it is read there and recorded', async () => {
    const home = await aws.sigv4(600_000);
    const other = await aws.bearer();
    const id = await createBatch(2, 'removed');
    const [row] = await sql()`select * from account_upstreams where id = ${home.id}`;
    expect((await op(`/upstreams/${home.id}`, undefined, 'DELETE')).status).toBe(200);

    // The follower says why it keeps the batch, and keeps it: not recorded, not read elsewhere.
    await waitFor(() => suite.stack.logs.some((l) => l.includes('was removed') && l.includes(id)), {
      timeout: 15_000,
      what: "the follower's warning about the removed upstream",
    });
    expect(await batchRow(id)).toMatchObject({ status: 'in_progress', results_recorded: 0 });
    // Checked again: put back at the longest backoff (a minute; a check's lease is two), and not
    // warned about a second time.
    await sql()`update batches set next_check_at = now() where id = ${id}`;
    await waitFor(
      async () => {
        const [b] =
          await sql()`select next_check_at between now() + interval '30 seconds' and now() + interval '90 seconds' as later from batches where id = ${id}`;
        return b?.later === true;
      },
      { timeout: 15_000, what: 'the second check putting the batch back at the longest backoff' },
    );
    const said = suite.stack.logs.filter((l) => l.includes('was removed') && l.includes(id));
    // (The second check's line is at debug level, which the compiled gateway here does not log.)
    expect(said.filter((l) => l.includes('"level":"warn"'))).toHaveLength(1);
    const got = await api(gateway(), `/v1/messages/batches/${id}`, { bearer: suite.stack.appKey });
    expect(got.status).toBe(502);
    expect(got.body.error.type).toBe('api_error');
    expect(got.body.error.message).toContain(`upstream ${home.id}, which has since been removed`);
    expect((await results(id)).status).toBe(502);
    const listed = await api(gateway(), '/v1/messages/batches', { bearer: suite.stack.appKey });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((b: { id: string }) => b.id)).not.toContain(id);
    const [owned] = await sql()`select deleted_at from provider_objects where id = ${id}`;
    expect(owned).toEqual({ deleted_at: null });
    expect(batchPaths(other.cloud)).toHaveLength(0);

    // The row restored (as a backup would): the batch is read there again, canceled, and recorded.
    await sql()`insert into account_upstreams ${sql()(row!)}`;
    const canceled = await api(gateway(), `/v1/messages/batches/${id}/cancel`, {
      bearer: suite.stack.appKey,
      method: 'POST',
    });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    expect(canceled.body.processing_status).toBe('canceling');
    // Its next check was put at the longest backoff; due now, it need not wait a minute.
    await sql()`update batches set next_check_at = now() where id = ${id}`;
    await recorded(id);
    const log = await op(`/requests?group_id=${id}&limit=10`);
    expect(log.body.data).toHaveLength(2);
    expect(
      log.body.data.every(
        (r: any) => r.upstream === home.id && r.status === 499 && r.error_type === 'canceled',
      ),
    ).toBe(true);
    expect(batchPaths(other.cloud)).toHaveLength(0);
  });
});
