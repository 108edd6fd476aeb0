import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../lib/call-record';
import { CALL_COLUMNS, callValues, copyLine, idOfLine, recordOfCopyLine } from './call-copy';

const awkward = 'tab\there\nnew\r\\back \\N \\t "q" é中😀';

const full: CallRecord = {
  id: 'req_01',
  accountId: 'acct_1',
  keyId: 'key_1',
  memberId: 'user_1',
  app: awkward,
  environment: '\\',
  groupId: 'grp\t1',
  client: 'claude_code',
  endpoint: 'messages',
  model: 'claude-opus-5-5',
  stream: true,
  status: 529,
  errorType: 'overloaded_error',
  usage: {
    input_tokens: 12,
    output_tokens: 3,
    cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 1 },
    cache_creation_input_tokens: 5,
    cache_read_input_tokens: 7,
    server_tool_use: { web_search_requests: 2 },
    service_tier: awkward,
    speed: 'fast',
  } as never,
  upstreamMessageId: 'msg_1',
  upstreamRequestId: 'req_up_1',
  retryCount: 2,
  latencyMs: 12.345,
  ttfbMs: 0.5,
  partial: true,
  estimated: true,
  batch: true,
  createdAt: new Date('2026-11-25T23:59:59.999Z'),
  agentId: 'agent\n2',
  parentAgentId: null,
  requestBytes: 2_000_000_000_000,
  responseBytes: 0,
  refusal: 'rate_limit:input_tokens',
  upstream: 'ups_aws',
};

describe('a call record as a COPY line', () => {
  it('is one line of one field per column, and reads back as the same record', () => {
    const line = copyLine(full);
    expect(line).not.toMatch(/[\n\r]/);
    expect(line.split('\t')).toHaveLength(CALL_COLUMNS.length);
    expect(recordOfCopyLine(line)).toEqual(full);
  });

  it('puts each value in its own column: the one the JSON insert gives it', () => {
    // The usage figures' columns are derived (the round trip reads usage back from its JSON), so
    // a swap between two of them would read back unseen: each field is checked where it stands.
    const escaped = (v: string) =>
      v.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);
    const expected = (v: unknown): string =>
      v == null
        ? '\\N'
        : typeof v === 'boolean'
          ? v
            ? 't'
            : 'f'
          : v instanceof Date
            ? v.toISOString()
            : escaped(typeof v === 'object' ? JSON.stringify(v) : String(v));
    for (const r of [full, { ...full, stream: false, partial: false, usage: null, batch: false }]) {
      const fields = copyLine(r).split('\t');
      const values = callValues(r);
      CALL_COLUMNS.forEach((column, i) => expect(fields[i], column).toBe(expected(values[i])));
    }
  });

  it('writes absent fields as null and reads them back as null (the optional ones included)', () => {
    const bare: CallRecord = {
      ...full,
      keyId: null,
      memberId: null,
      app: null,
      usage: null,
      ttfbMs: null,
      batch: false,
    };
    delete bare.agentId;
    delete bare.requestBytes;
    delete bare.refusal;
    delete bare.upstream;
    const line = copyLine(bare);
    // The ten left out, and the usage's tier, speed and region, which it no longer has.
    expect(line.split('\t').filter((f) => f === '\\N').length).toBe(13);
    expect(recordOfCopyLine(line)).toEqual({
      ...bare,
      agentId: null,
      requestBytes: null,
      refusal: null,
      upstream: null,
    });
  });

  it('reads a line spooled before the upstream column, or before the refusal column, as a record without them', () => {
    const fields = copyLine(full).split('\t');
    expect(recordOfCopyLine(fields.slice(0, -1).join('\t'))).toEqual({ ...full, upstream: null });
    expect(recordOfCopyLine(fields.slice(0, -2).join('\t'))).toEqual({
      ...full,
      refusal: null,
      upstream: null,
    });
  });

  it('names its call by its first field', () => {
    expect(idOfLine(copyLine(full))).toBe('req_01');
  });

  it('refuses a line that is not a record: another column count, no id, no time', () => {
    expect(recordOfCopyLine('req_1\tacct_1')).toBeNull();
    const fields = copyLine(full).split('\t');
    expect(recordOfCopyLine(['\\N', ...fields.slice(1)].join('\t'))).toBeNull();
    const time = CALL_COLUMNS.indexOf('created_at');
    expect(recordOfCopyLine(fields.map((f, i) => (i === time ? 'not a time' : f)).join('\t'))).toBeNull();
  });
});
