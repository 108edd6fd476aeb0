import type { CallRecord } from '../../src/lib/call-record';
import { randomBase62 } from '../../src/lib/ids';

export type Usage = Record<string, any>;

export function callAt(accountId: string, at: string, o: Partial<CallRecord> & { usage: Usage }): CallRecord {
  return {
    id: `req_${randomBase62(24)}`,
    accountId,
    keyId: null,
    memberId: null,
    app: null,
    environment: null,
    groupId: null,
    client: null,
    endpoint: 'messages',
    model: 'claude-opus-4-5',
    stream: false,
    status: 200,
    errorType: null,
    upstreamMessageId: null,
    upstreamRequestId: null,
    retryCount: 0,
    latencyMs: 12,
    ttfbMs: 5,
    partial: false,
    estimated: false,
    createdAt: new Date(at),
    ...o,
  };
}
