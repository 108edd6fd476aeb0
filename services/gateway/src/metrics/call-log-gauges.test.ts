import { describe, expect, it } from 'vitest';
import type { CallLogStatus } from '../call-log/writer';
import { Prices } from '../pricing/prices';
import { GatewayMetrics } from './metrics';

const idle: CallLogStatus = {
  queued: 0,
  segmentsOnDisk: 0,
  spoolBytes: 0,
  spoolSegments: 0,
  oldestAgeMs: null,
  spoolFull: false,
  spoolError: null,
  databaseUp: true,
  written: 0,
  rejected: 0,
  dropped: 0,
  databaseErrors: 0,
};

async function series(metrics: GatewayMetrics): Promise<Map<string, number>> {
  const lines = (await metrics.render()).body.split('\n').filter((l) => l.startsWith('keygate_call_log_'));
  return new Map(lines.map((l) => [l.split(' ')[0]!, Number(l.split(' ')[1])]));
}

describe("call-log gauges read the writer's status at each scrape", () => {
  it('show queue depth, losses and, with a spool, its bytes, oldest waiting record and full flag', async () => {
    let status = idle;
    const metrics = new GatewayMetrics(new Prices(), { callLog: { status: () => status, spooled: true } });
    expect(await series(metrics)).toEqual(
      new Map([
        ['keygate_call_log_queue_depth', 0],
        ['keygate_call_log_dropped_total', 0],
        ['keygate_call_log_spool_bytes', 0],
        ['keygate_call_log_spool_oldest_age_seconds', 0],
        ['keygate_call_log_spool_full', 0],
      ]),
    );
    status = {
      ...idle,
      queued: 7,
      spoolBytes: 4096,
      oldestAgeMs: 2_500,
      spoolFull: true,
      dropped: 3,
      databaseUp: false,
    };
    expect(await series(metrics)).toEqual(
      new Map([
        ['keygate_call_log_queue_depth', 7],
        ['keygate_call_log_dropped_total', 3],
        ['keygate_call_log_spool_bytes', 4096],
        ['keygate_call_log_spool_oldest_age_seconds', 2.5],
        ['keygate_call_log_spool_full', 1],
      ]),
    );
  });

  it('show no spool series when records go to the database from memory only', async () => {
    const metrics = new GatewayMetrics(new Prices(), {
      callLog: { status: () => ({ ...idle, queued: 2 }), spooled: false },
    });
    expect([...(await series(metrics)).keys()]).toEqual([
      'keygate_call_log_queue_depth',
      'keygate_call_log_dropped_total',
    ]);
  });
});
