import protobuf from 'protobufjs/light.js';

/**
 * The parts of OTLP's protobuf messages the receiver reads, as a protobufjs reflection
 * descriptor: field names and numbers of opentelemetry-proto v1 (common, resource, metrics,
 * logs and their collector services; https://github.com/open-telemetry/opentelemetry-proto,
 * read 2026-11-25). Fields left out here (histograms, exemplars, trace ids) are skipped by the
 * decoder as unknown fields, which is what protobuf does with any field it does not know.
 */
const kv = {
  KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
  AnyValue: {
    oneofs: {
      value: {
        oneof: [
          'stringValue',
          'boolValue',
          'intValue',
          'doubleValue',
          'arrayValue',
          'kvlistValue',
          'bytesValue',
        ],
      },
    },
    fields: {
      stringValue: { type: 'string', id: 1 },
      boolValue: { type: 'bool', id: 2 },
      intValue: { type: 'int64', id: 3 },
      doubleValue: { type: 'double', id: 4 },
      arrayValue: { type: 'ArrayValue', id: 5 },
      kvlistValue: { type: 'KeyValueList', id: 6 },
      bytesValue: { type: 'bytes', id: 7 },
    },
  },
  ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
  KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
  Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
  InstrumentationScope: {
    fields: { name: { type: 'string', id: 1 }, version: { type: 'string', id: 2 } },
  },
};

const metrics = {
  ExportMetricsServiceRequest: {
    fields: { resourceMetrics: { rule: 'repeated', type: 'ResourceMetrics', id: 1 } },
  },
  ResourceMetrics: {
    fields: {
      resource: { type: 'Resource', id: 1 },
      scopeMetrics: { rule: 'repeated', type: 'ScopeMetrics', id: 2 },
    },
  },
  ScopeMetrics: {
    fields: {
      scope: { type: 'InstrumentationScope', id: 1 },
      metrics: { rule: 'repeated', type: 'Metric', id: 2 },
    },
  },
  Metric: {
    fields: {
      name: { type: 'string', id: 1 },
      unit: { type: 'string', id: 3 },
      gauge: { type: 'Gauge', id: 5 },
      sum: { type: 'Sum', id: 7 },
    },
  },
  Gauge: { fields: { dataPoints: { rule: 'repeated', type: 'NumberDataPoint', id: 1 } } },
  Sum: {
    fields: {
      dataPoints: { rule: 'repeated', type: 'NumberDataPoint', id: 1 },
      aggregationTemporality: { type: 'int32', id: 2 },
      isMonotonic: { type: 'bool', id: 3 },
    },
  },
  NumberDataPoint: {
    fields: {
      attributes: { rule: 'repeated', type: 'KeyValue', id: 7 },
      startTimeUnixNano: { type: 'fixed64', id: 2 },
      timeUnixNano: { type: 'fixed64', id: 3 },
      asDouble: { type: 'double', id: 4 },
      asInt: { type: 'sfixed64', id: 6 },
    },
  },
};

const logs = {
  ExportLogsServiceRequest: {
    fields: { resourceLogs: { rule: 'repeated', type: 'ResourceLogs', id: 1 } },
  },
  ResourceLogs: {
    fields: {
      resource: { type: 'Resource', id: 1 },
      scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 },
    },
  },
  ScopeLogs: {
    fields: {
      scope: { type: 'InstrumentationScope', id: 1 },
      logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 },
    },
  },
  LogRecord: {
    fields: {
      timeUnixNano: { type: 'fixed64', id: 1 },
      observedTimeUnixNano: { type: 'fixed64', id: 11 },
      body: { type: 'AnyValue', id: 5 },
      attributes: { rule: 'repeated', type: 'KeyValue', id: 6 },
      eventName: { type: 'string', id: 12 },
    },
  },
};

/**
 * The answers: empty (everything accepted, zero bytes) or with a partial success saying how many
 * points or records were refused and why (collector/{metrics,logs}/v1/*_service.proto).
 */
const answers = {
  ExportMetricsServiceResponse: {
    fields: { partialSuccess: { type: 'ExportMetricsPartialSuccess', id: 1 } },
  },
  ExportMetricsPartialSuccess: {
    fields: { rejectedDataPoints: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } },
  },
  ExportLogsServiceResponse: { fields: { partialSuccess: { type: 'ExportLogsPartialSuccess', id: 1 } } },
  ExportLogsPartialSuccess: {
    fields: { rejectedLogRecords: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } },
  },
};

const root = protobuf.Root.fromJSON({
  nested: { otlp: { nested: { ...kv, ...metrics, ...logs, ...answers } } },
});

export const METRICS_REQUEST = root.lookupType('otlp.ExportMetricsServiceRequest');
export const LOGS_REQUEST = root.lookupType('otlp.ExportLogsServiceRequest');
export const METRICS_RESPONSE = root.lookupType('otlp.ExportMetricsServiceResponse');
export const LOGS_RESPONSE = root.lookupType('otlp.ExportLogsServiceResponse');

/** An export's answer as OTLP/JSON: `{}`, or a partial success when something was refused. */
export function exportResponse(signal: 'metrics' | 'logs', rejected: number, message: string) {
  if (rejected === 0) return {};
  // OTLP/JSON writes 64-bit integers as decimal strings.
  const count = String(rejected);
  return {
    partialSuccess:
      signal === 'metrics'
        ? { rejectedDataPoints: count, errorMessage: message }
        : { rejectedLogRecords: count, errorMessage: message },
  };
}

/**
 * A protobuf export request as the same plain object OTLP/JSON sends (lowerCamelCase names,
 * 64-bit integers as strings), so one reader takes both encodings. Throws on malformed bytes.
 */
export function decodeRequest(type: protobuf.Type, bytes: Uint8Array): unknown {
  return type.toObject(type.decode(bytes), { longs: String, bytes: String, defaults: false });
}

/** Encodes a plain OTLP/JSON-shaped object as protobuf (what tests and the relay send). */
export function encodeRequest(type: protobuf.Type, value: Record<string, unknown>): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}
