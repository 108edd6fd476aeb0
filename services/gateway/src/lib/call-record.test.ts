import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import {
  accruedRecord,
  answeredRecord,
  callRecord,
  clientClosedRecord,
  refusedRecord,
  type CallFacts,
  type CallRecord,
} from './call-record';

const CREATED = new Date('2026-11-25T12:00:00Z');

function facts(kind = 'live'): CallFacts {
  return {
    principal: {
      key: { id: 'key_1', accountId: 'acct_1', memberId: 'user_1', app: 'app', environment: 'ci', kind },
    },
    requestId: 'req_1',
    groupId: 'grp_1',
    client: 'claude_code',
    endpoint: 'POST /v1/files',
    model: 'claude-opus-5-5',
    stream: false,
    retryCount: 0,
    startedAt: performance.now() - 5,
    createdAt: CREATED,
    agentId: 'agent_1',
    parentAgentId: null,
  };
}

const ATTRIBUTED = {
  id: 'req_1',
  accountId: 'acct_1',
  keyId: 'key_1',
  memberId: 'user_1',
  app: 'app',
  environment: 'ci',
  groupId: 'grp_1',
  client: 'claude_code',
  endpoint: 'POST /v1/files',
  model: 'claude-opus-5-5',
  createdAt: CREATED,
  agentId: 'agent_1',
  parentAgentId: null,
};

const usage = { input_tokens: 3, output_tokens: 4 };

const CASES: {
  name: string;
  record: () => CallRecord;
  expected: Partial<CallRecord>;
  absent: (keyof CallRecord)[];
}[] = [
  {
    name: 'answered upstream',
    record: () =>
      callRecord(facts(), {
        model: 'claude-opus-5-5',
        status: 200,
        errorType: null,
        usage,
        estimated: false,
        upstreamMessageId: 'msg_1',
        upstreamRequestId: 'req_up',
        ttfbMs: 2,
        partial: false,
        upstream: 'bedrock-eu',
      }),
    expected: { ...ATTRIBUTED, status: 200, usage, upstream: 'bedrock-eu', upstreamMessageId: 'msg_1' },
    absent: ['refusal', 'test', 'batch'],
  },
  {
    name: 'answered by Keygate',
    record: () => answeredRecord(facts(), 200, null, { responseBytes: 12 }),
    expected: { ...ATTRIBUTED, status: 200, errorType: null, usage: null, partial: false, responseBytes: 12 },
    absent: ['refusal', 'upstream', 'test'],
  },
  {
    name: 'refused with a reason',
    record: () => refusedRecord(facts(), { status: 429, type: 'rate_limit_error', reason: 'spend_limit' }),
    expected: {
      ...ATTRIBUTED,
      status: 429,
      errorType: 'rate_limit_error',
      refusal: 'spend_limit',
      usage: null,
    },
    absent: ['upstream'],
  },
  {
    name: 'refused with no rule named',
    record: () => refusedRecord(facts(), { status: 400, type: 'invalid_request_error', reason: null }),
    expected: { ...ATTRIBUTED, status: 400, errorType: 'invalid_request_error' },
    absent: ['refusal', 'upstream'],
  },
  {
    name: 'client closed',
    record: () => clientClosedRecord(facts()),
    expected: { ...ATTRIBUTED, status: 499, errorType: 'client_closed', partial: true, usage: null },
    absent: ['refusal'],
  },
  {
    name: 'a test key is marked test',
    record: () => refusedRecord(facts('test'), { status: 403, type: 'permission_error' }),
    expected: { ...ATTRIBUTED, status: 403, test: true },
    absent: ['refusal'],
  },
  {
    name: 'batch result',
    record: () =>
      accruedRecord({
        id: 'req_batch_1',
        owner: { accountId: 'acct_1', keyId: 'key_1', memberId: 'user_1', app: 'app', environment: 'ci' },
        groupId: 'msgbatch_1',
        endpoint: 'messages.batch',
        batch: true,
        model: 'claude-opus-5-5',
        status: 200,
        errorType: null,
        usage,
        upstreamMessageId: 'msg_2',
        latencyMs: 1000,
        createdAt: CREATED,
      }),
    expected: {
      id: 'req_batch_1',
      accountId: 'acct_1',
      keyId: 'key_1',
      memberId: 'user_1',
      app: 'app',
      environment: 'ci',
      groupId: 'msgbatch_1',
      client: null,
      endpoint: 'messages.batch',
      batch: true,
      stream: false,
      retryCount: 0,
      latencyMs: 1000,
      usage,
      upstreamRequestId: null,
      createdAt: CREATED,
    },
    absent: ['refusal', 'test'],
  },
  {
    name: 'session usage',
    record: () =>
      accruedRecord({
        id: 'req_session_1',
        owner: { accountId: 'acct_1', keyId: 'key_2', memberId: null, app: null, environment: null },
        groupId: 'sesn_1',
        endpoint: 'sessions.usage',
        model: 'claude-haiku-5-5',
        status: 200,
        errorType: null,
        usage,
        upstreamMessageId: null,
        latencyMs: 0,
        createdAt: CREATED,
      }),
    expected: {
      keyId: 'key_2',
      memberId: null,
      groupId: 'sesn_1',
      endpoint: 'sessions.usage',
      partial: false,
    },
    absent: ['batch', 'refusal', 'test'],
  },
];

describe('call record constructors', () => {
  it.each(CASES)('$name: every field filled, attribution and reason as the call had them', (c) => {
    const r = c.record();
    expect(r).toMatchObject(c.expected);
    for (const field of c.absent) expect(r[field], field).toBeUndefined();
    // Every field the call log requires is present (null is a value; undefined is a gap).
    for (const field of [
      'id',
      'accountId',
      'endpoint',
      'status',
      'latencyMs',
      'createdAt',
      'stream',
    ] as const)
      expect(r[field], field).not.toBeUndefined();
    for (const field of ['keyId', 'memberId', 'app', 'environment', 'groupId', 'client', 'model'] as const)
      expect(field in r, field).toBe(true);
  });

  it("a request's latency is measured from when it arrived", () => {
    const r = clientClosedRecord(facts());
    expect(r.latencyMs).toBeGreaterThanOrEqual(5);
    expect(r.latencyMs).toBeLessThan(60_000);
  });
});
