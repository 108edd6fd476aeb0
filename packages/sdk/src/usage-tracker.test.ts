import { describe, expect, it, vi } from 'vitest';
import { USAGE } from './test-support';
import { UsageTracker } from './usage-tracker';
import { categorize, emptySummary, normalizeUsage, type UsageRecord } from './usage-types';

function record(overrides: Partial<UsageRecord> = {}): UsageRecord {
  return {
    requestId: 'req_1',
    gatewayRequestId: 'req_g1',
    groupId: null,
    endpoint: 'messages',
    method: 'POST',
    model: 'm',
    messageId: 'msg_1',
    stream: false,
    status: 200,
    errorType: null,
    errorCategory: null,
    stopReason: 'end_turn',
    usage: normalizeUsage(USAGE),
    estimated: false,
    providerUsage: USAGE,
    latencyMs: 10,
    ttfbMs: 5,
    retries: 0,
    retryCategories: [],
    startedAt: new Date(),
    ...overrides,
  };
}

describe('UsageTracker', () => {
  it('totals every call, and each group apart', () => {
    const tracker = new UsageTracker();
    tracker.add(record());
    tracker.add(record({ groupId: 'a' }));
    tracker.add(
      record({
        groupId: 'a',
        usage: null,
        status: 529,
        errorType: 'overloaded_error',
        errorCategory: 'overloaded',
        retries: 2,
        retryCategories: ['overloaded', 'rate_limit'],
      }),
    );
    tracker.add(record({ groupId: 'b' }));
    const total = tracker.total();
    expect(total).toMatchObject({
      calls: 4,
      input_tokens: 360,
      output_tokens: 126,
      cache_creation_input_tokens: 90,
      cache_read_input_tokens: 21,
    });
    expect(total.cache_creation).toEqual({ ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 60 });
    expect(total.errors).toMatchObject({ overloaded: 1, rate_limit: 0 });
    expect(total.retries).toMatchObject({ overloaded: 1, rate_limit: 1 });
    const groups = tracker.byGroup();
    expect([...groups.keys()]).toEqual(['a', 'b']);
    expect(groups.get('a')).toMatchObject({ calls: 2, input_tokens: 120, errors: { overloaded: 1 } });
    expect(tracker.group('nobody')).toEqual(emptySummary());
  });

  it('hands out copies: callers cannot change the totals', () => {
    const tracker = new UsageTracker();
    tracker.add(record({ groupId: 'a' }));
    tracker.total().cache_creation.ephemeral_1h_input_tokens = 999;
    tracker.byGroup().get('a')!.errors.other = 999;
    expect(tracker.total().cache_creation.ephemeral_1h_input_tokens).toBe(20);
    expect(tracker.group('a').errors.other).toBe(0);
  });

  it('counts malformed tool calls in the total and the group', () => {
    const tracker = new UsageTracker();
    tracker.addMalformedToolCalls('g', 2);
    tracker.addMalformedToolCalls(null);
    expect(tracker.total().errors.malformed_tool_call).toBe(3);
    expect(tracker.group('g').errors.malformed_tool_call).toBe(2);
  });

  it('tells listeners; a listener that throws affects nobody else', () => {
    const onListenerError = vi.fn();
    const tracker = new UsageTracker({ onListenerError });
    const seen: string[] = [];
    tracker.on(() => {
      throw new Error('boom');
    });
    const off = tracker.on((r) => seen.push(r.requestId!));
    tracker.add(record({ requestId: 'one' }));
    off();
    tracker.add(record({ requestId: 'two' }));
    expect(seen).toEqual(['one']);
    expect(onListenerError).toHaveBeenCalledTimes(2);
    expect(tracker.total().calls).toBe(2);
  });

  it('streams future records to an async iterator until it is stopped', async () => {
    const tracker = new UsageTracker();
    const controller = new AbortController();
    const got: string[] = [];
    const reading = (async () => {
      for await (const r of tracker.watch({ signal: controller.signal })) got.push(r.requestId!);
    })();
    tracker.add(record({ requestId: 'a' }));
    tracker.add(record({ requestId: 'b' }));
    await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await reading;
    expect(got).toEqual(['a', 'b']);
    const iterator = tracker[Symbol.asyncIterator]();
    tracker.add(record({ requestId: 'c' }));
    expect((await iterator.next()).value.requestId).toBe('c');
    await iterator.return!();
  });

  it('keeps a bounded list of recent records, and resets', () => {
    const tracker = new UsageTracker({ keep: 2 });
    for (const id of ['a', 'b', 'c']) tracker.add(record({ requestId: id }));
    expect(tracker.recent().map((r) => r.requestId)).toEqual(['b', 'c']);
    tracker.reset();
    expect(tracker.recent()).toEqual([]);
    expect(tracker.total().calls).toBe(0);
  });
});

describe('usage helpers', () => {
  it('normalizeUsage fills what the provider left out; cache writes without a split count as 5-minute writes', () => {
    expect(normalizeUsage({ input_tokens: 3, output_tokens: 4, cache_creation_input_tokens: 9 })).toEqual({
      input_tokens: 3,
      output_tokens: 4,
      cache_creation_input_tokens: 9,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 9, ephemeral_1h_input_tokens: 0 },
      server_tool_use: { web_search_requests: 0 },
    });
  });

  it.each([
    [429, 'rate_limit_error', 'rate_limit'],
    [529, 'overloaded_error', 'overloaded'],
    [200, 'overloaded_error', 'overloaded'],
    [504, 'timeout_error', 'timeout'],
    [null, 'timeout', 'timeout'],
    [null, 'connection', 'connection'],
    [500, 'api_error', 'other'],
    [400, 'invalid_request_error', 'other'],
  ] as const)('categorize(%s, %s) is %s', (status, type, category) => {
    expect(categorize(status, type)).toBe(category);
  });
});
