import { describe, expect, it } from 'vitest';
import { decodeRequest, encodeRequest, LOGS_REQUEST, METRICS_REQUEST } from './proto';
import { readEvents, readMetrics } from './read';

const NOW = new Date('2026-11-25T12:00:00Z');
const s = (key: string, v: string) => ({ key, value: { stringValue: v } });

describe('readMetrics', () => {
  const body = {
    resourceMetrics: [
      {
        resource: { attributes: [s('session.id', 'from-resource')] },
        scopeMetrics: [
          {
            metrics: [
              {
                name: 'claude_code.lines_of_code.count',
                sum: {
                  aggregationTemporality: 2,
                  dataPoints: [
                    {
                      attributes: [
                        s('type', 'added'),
                        s('model', 'm'),
                        s('terminal.type', 'vscode'),
                        s('user.email', 'x@y'),
                        s('custom', 'z'),
                      ],
                      startTimeUnixNano: '1795636616383000000',
                      timeUnixNano: '1795636617363000000',
                      asInt: '12',
                    },
                    { attributes: [], asDouble: 'NaN' },
                  ],
                },
              },
              { name: 'process.cpu.time', sum: { dataPoints: [{ asDouble: 1 }] } },
            ],
          },
        ],
      },
    ],
  };

  it('keeps Claude Code counters with their breakdown, the session from the resource, cumulative series', () => {
    expect(readMetrics(body, NOW).points).toEqual([
      {
        metric: 'claude_code.lines_of_code.count',
        sessionId: 'from-resource',
        at: new Date(1795636617363),
        start: '1795636616383000000',
        cumulative: true,
        value: 12,
        dims: { type: 'added', model: 'm', 'terminal.type': 'vscode' },
      },
    ]);
    expect(readMetrics(body, NOW).rejected).toBe(0);
  });

  it('reads protobuf as it reads JSON (64-bit fields as strings)', () => {
    const bytes = encodeRequest(METRICS_REQUEST, body);
    expect(readMetrics(decodeRequest(METRICS_REQUEST, bytes), NOW)).toEqual(readMetrics(body, NOW));
  });

  it('refuses a body of the wrong shape with the path of the problem', () => {
    expect(() => readMetrics({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{}] }] }] }, NOW)).toThrow(
      /resourceMetrics\[0\]\.scopeMetrics\[0\]\.metrics\[0\]\.name/,
    );
  });
});

describe('readEvents', () => {
  it('keeps only the allowed attributes of the kept events; a time of 0 is the receive time', () => {
    const body = {
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: '0',
                  eventName: 'claude_code.user_prompt',
                  attributes: [
                    s('session.id', 'sess'),
                    s('prompt', 'secret words'),
                    s('prompt_length', '12'),
                    s('response', 'model text'),
                  ],
                },
                { body: { stringValue: 'claude_code.api_response_body' }, attributes: [s('body', '{}')] },
                {
                  body: { stringValue: 'claude_code.tool_result' },
                  attributes: [
                    s('tool_name', 'Bash'),
                    s('tool_parameters', '{"full_command":"cat .env"}'),
                    { key: 'attempt', value: { intValue: '2' } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const fromProtobuf = decodeRequest(LOGS_REQUEST, encodeRequest(LOGS_REQUEST, body));
    for (const decoded of [body, fromProtobuf]) {
      const { events, dropped } = readEvents(decoded, NOW);
      expect(dropped).toBe(1);
      expect(events.map((e) => [e.name, e.sessionId, e.at, e.attrs])).toEqual([
        ['user_prompt', 'sess', NOW, { prompt_length: '12' }],
        ['tool_result', '', NOW, { tool_name: 'Bash', attempt: 2 }],
      ]);
    }
  });
});
