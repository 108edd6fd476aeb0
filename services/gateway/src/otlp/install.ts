import type { Kernel } from '../kernel/kernel';
import type { Store } from '../store';
import { OtlpRelay } from './relay';

/** Telemetry's queries: the received metrics and events, and each account's relay target. */
export type TelemetryStore = Pick<Store, 'telemetry'>;

/** Claude Code's telemetry: received on `/otlp/v1/*`, relayed to each account's own collector if it set one. */
export interface Telemetry {
  relay: OtlpRelay;
  store: TelemetryStore;
}

export function installTelemetry(kernel: Kernel): Telemetry {
  const store: TelemetryStore = { telemetry: kernel.tenancy.telemetry };
  const relay = new OtlpRelay(store, kernel.egress, kernel.logger);
  kernel.closer.add(() => relay.close());
  return { relay, store };
}
