import type { Kernel } from '../kernel/kernel';
import { OtlpRelay } from './relay';

/** Claude Code's telemetry: received on `/otlp/v1/*`, relayed to each account's own collector if it set one. */
export interface Telemetry {
  relay: OtlpRelay;
}

export function installTelemetry(kernel: Kernel): Telemetry {
  const relay = new OtlpRelay(kernel.store, kernel.egress, kernel.logger);
  kernel.closer.add(() => relay.close());
  return { relay };
}
