import type { CallRecord } from '../lib/call-record';

/** A place a finished call's record goes. */
export type CallSink = (record: CallRecord) => void;

export interface FanOutDeps {
  /** Pairs the record with its request's access line (written when the request ends). */
  access: { hold(record: CallRecord): void } | null;
  /** The call log (null when KEYGATE_CALL_LOG is off). */
  callLog: { enqueue(record: CallRecord): void } | null;
  /** Admission's counters: token and spend holds settle, budgets are charged, and their threshold alerts fire. */
  admission: { settle(record: CallRecord): void };
  metrics: { observeCall(record: CallRecord): void } | null;
}

/**
 * Where a finished call goes, successful or not: its access line, the call log, the limits and
 * budgets it counts toward (and through them the budget alerts), and the metrics. Every call
 * the proxy answers or refuses comes here exactly once; the sinks are fixed when the gateway
 * starts, so a call costs one function call per sink.
 */
export function fanOut(deps: FanOutDeps): CallSink {
  const { access, callLog, admission, metrics } = deps;
  return function finished(record: CallRecord): void {
    access?.hold(record);
    callLog?.enqueue(record);
    admission.settle(record);
    metrics?.observeCall(record);
  };
}
