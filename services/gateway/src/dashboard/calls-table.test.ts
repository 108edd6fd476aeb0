import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../lib/call-record';
import { BATCH_ENDPOINT, Prices, SESSION_ENDPOINT } from '../pricing/prices';
import { pathTemplate } from '../surface/call';
import { callsTable, endpointLabel } from './calls-table';
import { cellText } from './table';
import { callAt } from '../../test/kit/call-records';

const call = (o: Partial<CallRecord>): CallRecord => ({
  ...callAt('acct_1', '2026-01-05T10:00:00Z', {
    model: 'claude-sonnet-4-5',
    usage: { input_tokens: 1000, output_tokens: 100 },
    latencyMs: 40,
    ttfbMs: 10,
  }),
  ...o,
});

const rowsOf = (calls: CallRecord[]) => {
  const table = callsTable(
    new Prices(),
    'calls',
    '',
    calls,
    { keys: new Map(), members: new Map() },
    (p) => p,
    'UTC',
  );
  const labels = table.columns.map((c) => c.label);
  return table.rows.map((r) => Object.fromEntries(r.map((cell, i) => [labels[i], cellText(cell)])));
};

describe('endpoint labels', () => {
  // The endpoints as the routes log them: proxy names, and method plus path template.
  it.each([
    ['messages', 'Messages'],
    ['count_tokens', 'Count tokens'],
    ['models', 'Models'],
    [BATCH_ENDPOINT, 'Messages (batch)'],
    [SESSION_ENDPOINT, 'Sessions: usage'],
    [pathTemplate('POST', '/v1/files'), 'Files: upload'],
    [pathTemplate('GET', '/v1/files'), 'Files: list'],
    [pathTemplate('GET', '/v1/files/file_011CNha8iCJcU1wXNR6q4V8w'), 'Files: get'],
    [pathTemplate('GET', '/v1/files/file_011CNha8iCJcU1wXNR6q4V8w/content'), 'Files: download'],
    [pathTemplate('DELETE', '/v1/files/file_011CNha8iCJcU1wXNR6q4V8w'), 'Files: delete'],
    [pathTemplate('POST', '/v1/messages/batches'), 'Batches: create'],
    [pathTemplate('GET', '/v1/messages/batches'), 'Batches: list'],
    [
      pathTemplate('POST', '/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/cancel'),
      'Batches: cancel',
    ],
    [
      pathTemplate('GET', '/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results'),
      'Batches: results',
    ],
    [pathTemplate('POST', '/v1/sessions'), 'Sessions: create'],
    [pathTemplate('POST', '/v1/sessions/sesn_01abc/events'), 'Sessions: send events'],
    [pathTemplate('GET', '/v1/sessions/sesn_01abc/events/stream'), 'Sessions: event stream'],
    [pathTemplate('GET', '/v1/skills/skill_01abc/versions/1759178010641129'), 'Skills: get version'],
    [pathTemplate('DELETE', '/v1/agents/agent_01abc'), 'Agents: delete'],
  ])('%s reads %j', (endpoint, label) => {
    expect(endpointLabel(endpoint)).toBe(label);
  });

  it.each([
    'GET /v1/future/{id}',
    'GET /v1/files/{id}/thumbnail',
    'GET /v1/filesystem',
    'PATCH /v1/messages/batches/{id}',
    'toString',
  ])('an endpoint it does not know shows as logged: %s', (endpoint) => {
    expect(endpointLabel(endpoint)).toBe(endpoint);
  });
});

describe('the calls table', () => {
  it('names the endpoint of each call right after its model', () => {
    const table = callsTable(
      new Prices(),
      'calls',
      '',
      [],
      { keys: new Map(), members: new Map() },
      (p) => p,
      'UTC',
    );
    const labels = table.columns.map((c) => c.label);
    expect(labels.slice(0, 7)).toEqual([
      'Time (UTC)',
      'Member',
      'Key',
      'Model',
      'Endpoint',
      'Status',
      'Cost (USD)',
    ]);
  });

  it('shows a Files upload as a successful Files call costing nothing, not as a failed Messages call', () => {
    const [upload, failed] = rowsOf([
      call({ endpoint: 'POST /v1/files', model: null, usage: null, requestBytes: 40_000 }),
      call({ status: 529, errorType: 'overloaded_error', usage: null }),
    ]);
    expect(upload).toMatchObject({
      Model: '',
      Endpoint: 'Files: upload',
      Status: '200',
      'Cost (USD)': '0.0000',
    });
    expect(failed).toMatchObject({
      Model: 'claude-sonnet-4-5',
      Endpoint: 'Messages',
      Status: '529 overloaded_error',
    });
  });

  it('labels a batch result and keeps its model and cost', () => {
    const [row] = rowsOf([call({ endpoint: BATCH_ENDPOINT, batch: true })]);
    expect(row).toMatchObject({ Model: 'claude-sonnet-4-5', Endpoint: 'Messages (batch)', Output: '100' });
    expect(Number(row!['Cost (USD)'])).toBeGreaterThan(0);
  });
});
