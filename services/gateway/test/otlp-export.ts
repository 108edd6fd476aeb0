/**
 * Claude Code's metrics export in the documented shape (https://code.claude.com/docs/en/monitoring-usage,
 * read 2026-11-25; the same names and attributes Claude Code 2.1.330 sent on loopback): counters
 * as Sums, DELTA (aggregationTemporality 1) unless said otherwise, one point each.
 */
export type Attribute = { key: string; value: { stringValue: string } };
export const str = (key: string, v: string): Attribute => ({ key, value: { stringValue: v } });
export const nowNs = () => String(BigInt(Date.now()) * 1_000_000n);

export function metricsExport(
  session: string,
  points: Array<[name: string, value: number, attributes: Attribute[]]>,
  opts: { temporality?: 1 | 2; start?: string; attributes?: Attribute[] } = {},
) {
  const t = nowNs();
  return {
    resourceMetrics: [
      {
        resource: { attributes: [str('service.name', 'claude-code')] },
        scopeMetrics: [
          {
            scope: { name: 'com.anthropic.claude_code' },
            metrics: points.map(([name, value, attrs]) => ({
              name,
              sum: {
                aggregationTemporality: opts.temporality ?? 1,
                isMonotonic: true,
                dataPoints: [
                  {
                    attributes: [str('session.id', session), ...(opts.attributes ?? []), ...attrs],
                    startTimeUnixNano: opts.start ?? t,
                    timeUnixNano: t,
                    asDouble: value,
                  },
                ],
              },
            })),
          },
        ],
      },
    ],
  };
}

/** Claude Code's logs export: one record per event, each with the session's id and its own attributes. */
export function logsExport(session: string, events: Array<[name: string, attributes: Attribute[]]>) {
  const logRecords = events.map(([name, attrs]) => ({
    timeUnixNano: nowNs(),
    body: { stringValue: `claude_code.${name}` },
    attributes: [str('session.id', session), str('event.name', name), ...attrs],
  }));
  const scopeLogs = [{ scope: { name: 'com.anthropic.claude_code' }, logRecords }];
  return { resourceLogs: [{ resource: { attributes: [str('service.name', 'claude-code')] }, scopeLogs }] };
}
