import { BUNDLED_CATALOG } from '../src/pricing/catalog/catalog';
import type Anthropic from '@anthropic-ai/sdk';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callCost, figureCounts } from '../src/pricing/prices';
import type { Sql } from '../src/store';
import { BatchFollower, type FollowerDeps } from '../src/surface/batch-follower';
import { usageFigures } from '../src/usage/usage';
import { batchRequests } from './kit/batch-requests';
import { handCentsOfUsage, type ProviderUsage } from './kit/published-rates';
import { waitFor } from './kit/wait';
import { failure, startSurfaceStack, type SurfaceStack } from './surface-kit';

const requests = batchRequests;

/** Polls the batch (a signal: its processing_status) until it has ended. */
async function ended(client: Anthropic, id: string) {
  for (let i = 0; i < 200; i++) {
    const batch = await client.messages.batches.retrieve(id);
    if (batch.processing_status === 'ended') return batch;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`batch ${id} did not end`);
}

describe('Message Batches through the gateway', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  it('the official SDK gets the same answers through the gateway as straight at the emulator, results_url pointing at the gateway', async () => {
    const body = { requests: requests(3, 'same') };
    const [viaGateway, direct] = [
      await s.alice.client.messages.batches.create(body),
      await s.direct.messages.batches.create(body),
    ];
    const stable = ({
      id: _i,
      created_at: _c,
      expires_at: _e,
      ended_at: _n,
      results_url: _r,
      ...rest
    }: any) => rest;
    expect(stable(viaGateway)).toEqual(stable(direct));
    expect(viaGateway).toMatchObject({ processing_status: 'in_progress', request_counts: { processing: 3 } });

    const [doneG, doneD] = await Promise.all([
      ended(s.alice.client, viaGateway.id),
      ended(s.direct, direct.id),
    ]);
    expect(stable(doneG)).toEqual(stable(doneD));
    expect(doneG.results_url).toBe(`${s.stack.gateway.url}/v1/messages/batches/${viaGateway.id}/results`);
    expect(doneD.results_url).toBe(`${s.stack.emulator.url}/v1/messages/batches/${direct.id}/results`);

    const collect = async (c: Anthropic, id: string) => {
      const out = [];
      for await (const r of await c.messages.batches.results(id)) out.push(r);
      return out;
    };
    const [resG, resD] = [await collect(s.alice.client, viaGateway.id), await collect(s.direct, direct.id)];
    const shape = (rs: any[]) =>
      rs.map((r) => ({
        custom_id: r.custom_id,
        type: r.result.type,
        text: r.result.message?.content,
        usage: r.result.message?.usage,
      }));
    expect(shape(resG)).toEqual(shape(resD));
    expect(resG.map((r) => r.custom_id)).toEqual(['same-0', 'same-1', 'same-2']);

    const listed = await s.alice.client.messages.batches.list();
    expect(listed.data.find((b) => b.id === viaGateway.id)?.results_url).toBe(doneG.results_url);

    expect(await s.alice.client.messages.batches.delete(viaGateway.id)).toEqual({
      id: viaGateway.id,
      type: 'message_batch_deleted',
    });
    expect(await s.direct.messages.batches.delete(direct.id)).toEqual({
      id: direct.id,
      type: 'message_batch_deleted',
    });

    const toCancel = body;
    const [cg, cd] = [
      await s.alice.client.messages.batches.create(toCancel),
      await s.direct.messages.batches.create(toCancel),
    ];
    const [canceledG, canceledD] = [
      await s.alice.client.messages.batches.cancel(cg.id),
      await s.direct.messages.batches.cancel(cd.id),
    ];
    expect(stable(canceledG)).toEqual({ ...stable(canceledD), cancel_initiated_at: expect.any(String) });
    expect(canceledG.processing_status).toBe('canceling');
    expect((await ended(s.alice.client, cg.id)).request_counts.canceled).toBe(3);

    // Every result becomes a call of its creator at the batch price, grouped by the batch id.
    await waitRecorded(s.stack.gateway.store.db.sql, viaGateway.id);
    const calls = (await s.stack.calls()).filter((c) => c.group_id === viaGateway.id);
    expect(calls).toHaveLength(3);
    expect(calls.every((c) => c.endpoint === 'messages.batch' && c.member_id === s.alice.memberId)).toBe(
      true,
    );
  });

  it('checks each request like a /v1/messages body before the provider sees it', async () => {
    const bad = requests(2, 'bad');
    (bad[1]!.params as Record<string, unknown>).max_tokens = 'lots';
    const before = s.stack.emulator.surface.batches.batches.size;
    const err = await failure(s.alice.client.messages.batches.create({ requests: bad }));
    expect(err).toMatchObject({ status: 400, type: 'invalid_request_error' });
    expect(err.message).toMatch(/^requests\[1\]\.params: max_tokens/);
    const dup = [...requests(1, 'dup'), ...requests(1, 'dup')];
    expect((await failure(s.alice.client.messages.batches.create({ requests: dup }))).message).toMatch(
      /appears twice/,
    );
    expect(s.stack.emulator.surface.batches.batches.size).toBe(before);
  });

  it("member B gets 404 for member A's batch by id, results and list; admins see it", async () => {
    const batch = await s.alice.client.messages.batches.create({ requests: requests(1, 'private') });
    for (const attempt of [
      () => s.bob.client.messages.batches.retrieve(batch.id),
      () => s.bob.client.messages.batches.cancel(batch.id),
      () => s.bob.client.messages.batches.delete(batch.id),
    ]) {
      expect(await failure(attempt())).toEqual({
        status: 404,
        type: 'not_found_error',
        message: `Message batch not found: ${batch.id}`,
      });
    }
    const res = await fetch(`${s.stack.gateway.url}/v1/messages/batches/${batch.id}/results`, {
      headers: { authorization: `Bearer ${s.bob.key}` },
    });
    expect(res.status).toBe(404);
    expect((await s.bob.client.messages.batches.list()).data.map((b) => b.id)).not.toContain(batch.id);
    expect((await s.admin.client.messages.batches.list()).data.map((b) => b.id)).toContain(batch.id);
    expect((await s.admin.client.messages.batches.retrieve(batch.id)).id).toBe(batch.id);
  });

  it("a batch's results_url names the gateway's own address, never the client's Host header", async () => {
    const url = s.stack.gateway.url;
    const forged = 'attacker.example';
    const created = await withHost('POST', `${url}/v1/messages/batches`, s.alice.key, forged, {
      requests: [
        {
          custom_id: 'a',
          params: { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'a' }] },
        },
      ],
    });
    expect(created.type).toBe('message_batch');
    const ended = await waitFor(
      async () => {
        const b = await withHost('GET', `${url}/v1/messages/batches/${created.id}`, s.alice.key, forged);
        return b.processing_status === 'ended' && b;
      },
      { timeout: 15_000, what: 'the batch to end' },
    );
    expect(ended.results_url).toBe(`${url}/v1/messages/batches/${created.id}/results`);
    const listed = await withHost('GET', `${url}/v1/messages/batches`, s.alice.key, forged);
    expect(listed.data.find((b: { id: string }) => b.id === created.id).results_url).toBe(ended.results_url);
  });

  it('a follower that stops gives back the batches it took and did not check: due at once, not after the lease', async () => {
    const store = s.stack.gateway.store;
    const id = 'msgbatch_011release';
    await store.objects.followBatch({
      id,
      accountId: s.stack.account.id,
      keyId: s.bob.keyId,
      memberId: s.bob.memberId,
      app: null,
      environment: null,
      groupId: id,
      live: true,
      requestCount: 1,
      reservedCents: 0,
      hold: null,
      upstreamId: null,
    });
    // Stopped before its check runs: it takes the due batches (pushing them past the lease),
    // then must give them back untouched. It takes this batch alone (the stack's own follower
    // runs too and could take it first), and the row is read as it is given back.
    const given: { ids: string[]; due: unknown }[] = [];
    let taken = false;
    const objects = {
      ...store.objects,
      dueBatches: async () => {
        if (taken) return [];
        taken = true;
        const batch = await store.objects.takeBatch(id, 120_000);
        return batch ? [batch] : [];
      },
      releaseBatches: async (ids: string[]) => {
        await store.objects.releaseBatches(ids);
        const [row] = await store.db.sql`select next_check_at <= now() as due from batches where id = ${id}`;
        given.push({ ids, due: row });
      },
    };
    const follower = new BatchFollower({ store: { ...store, objects } } as unknown as FollowerDeps);
    await follower.stop();
    await follower.check();
    expect(taken).toBe(true);
    expect(given).toEqual([{ ids: [id], due: { due: true } }]);
    await store.db.sql`delete from batches where id = ${id}`;
  });

  it('records in full at the batch price, grouped by batch id, a batch whose client never fetches results, across a gateway restart', async () => {
    const batch = await s.bob.client.messages.batches.create({ requests: requests(4, 'restart') });
    // The gateway that took the batch goes away before it ends; another takes over from PostgreSQL.
    await s.stack.gateway.close();
    expect(s.stack.emulator.surface.batches.get(batch.id).object.processing_status).toBe('in_progress');
    const peer = await s.stack.startPeer();
    const [open] = await peer.store.db.sql`select status from batches where id = ${batch.id}`;
    expect(open?.status).toBe('in_progress');
    const sql = peer.store.db.sql;
    await waitRecorded(sql, batch.id);
    const calls = await sql`select * from calls where group_id = ${batch.id} order by id`;
    expect(calls).toHaveLength(4);
    const ledger = s.stack.emulator.ledger.entries.filter((e) => e.batchId === batch.id);
    expect(ledger).toHaveLength(4);
    let cents = 0;
    for (const entry of ledger) {
      const call = calls.find((c) => c.upstream_message_id === entry.messageId)!;
      expect(call).toMatchObject({
        endpoint: 'messages.batch',
        member_id: s.bob.memberId,
        key_id: s.bob.keyId,
        status: 200,
        input_tokens: entry.usage!.input_tokens,
        output_tokens: entry.usage!.output_tokens,
      });
      cents += callCost(
        entry.model,
        figureCounts(usageFigures(entry.usage as never)),
        { at: new Date(), batch: true },
        BUNDLED_CATALOG,
      ).cents;
    }
    // The provider's usage of each result at the published list price, by hand; a batch pays half.
    const full = ledger.reduce((sum, e) => sum + handCentsOfUsage(e.model!, e.usage as ProviderUsage), 0);
    expect(cents).toBeCloseTo(full / 2, 9);
    const [row] = await sql`select status, results_recorded from batches where id = ${batch.id}`;
    expect(row).toEqual({ status: 'recorded', results_recorded: 4 });
  });
});

/** Waits until the follower has recorded the batch (its row says so). */
async function waitRecorded(sql: Sql, id: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const [row] = await sql`select status from batches where id = ${id}`.catch(() => [] as any[]);
    if (row?.status === 'recorded') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`batch ${id} was not recorded`);
}

/** A call with a forged `Host` header (fetch does not let a caller set one): its JSON answer. */
function withHost(method: string, url: string, key: string, host: string, body?: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method,
      headers: { host, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
