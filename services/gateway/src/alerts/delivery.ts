import { fetch, type Dispatcher } from 'undici';
import { EGRESS_BLOCKED, type EgressPolicy } from '../lib/egress';
import type { Logger } from '../lib/logger';
import type { SecretBox } from '../lib/secret-box';
import { ALERTS_CHANNEL, type ClaimedDelivery } from '../budgets/alert-queries';
import type { Store } from '../store';
import { SIGNATURE_HEADER, signatureHeader } from './signature';

export interface DeliveryOptions {
  /** How often to look for due deliveries when no notification arrives. */
  pollMs: number;
  /** The first retry's delay; it doubles with each attempt, up to an hour. */
  retryMs: number;
  /** Attempts before a delivery is marked failed. */
  maxAttempts: number;
  timeoutMs: number;
  /** Deliveries claimed at once (one per endpoint at most). */
  batch?: number;
  /** Where deliveries may connect (checked after DNS, on the address connected to). */
  egress: EgressPolicy;
}

const MAX_RETRY_MS = 3_600_000;

/**
 * Delivers queued alerts to webhook endpoints, on every instance: rows are claimed with
 * `FOR UPDATE SKIP LOCKED` (see `store.alerts.claim`), so instances share the work and each
 * endpoint receives its events one at a time, in order, at least once.
 */
export class DeliveryWorker {
  readonly #store: Pick<Store, 'alerts' | 'db'>;
  readonly #box: SecretBox;
  readonly #opts: Required<DeliveryOptions>;
  readonly #dispatcher: Dispatcher;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #unlisten: () => Promise<void> = async () => {};

  constructor(store: Pick<Store, 'alerts' | 'db'>, box: SecretBox, opts: DeliveryOptions, logger: Logger) {
    this.#store = store;
    this.#box = box;
    this.#opts = { batch: 20, ...opts };
    this.#dispatcher = opts.egress.dispatcher({ connectTimeoutMs: opts.timeoutMs });
    this.#logger = logger;
  }

  async start(): Promise<void> {
    try {
      // Every new event notifies (the outbox trigger): delivery starts at once, not at the next poll.
      const listener = await this.#store.db.sql.listen(ALERTS_CHANNEL, () => this.wake());
      this.#unlisten = listener.unlisten;
    } catch (error) {
      this.#logger.warn('LISTEN unavailable; webhook deliveries wait for the poll', { error });
    }
    this.#timer = setInterval(() => this.wake(), this.#opts.pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        const claimed = await this.#store.alerts.claim(this.#opts.batch, this.#opts.timeoutMs + 30_000);
        if (claimed.length === 0 || this.#stopped) return;
        await Promise.all(claimed.map((d) => this.#deliver(d)));
      }
    } catch (error) {
      this.#logger.warn('webhook delivery round failed', { error });
    }
  }

  async #deliver(d: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify({
      id: d.eventId,
      type: d.type,
      created_at: d.createdAt.toISOString(),
      account_id: d.accountId,
      data: d.data,
    });
    const secret = this.#box.open(d.secretSealed, { purpose: 'webhook-secret', row: d.endpointId });
    let outcome: { status: number | null; error: string };
    try {
      const res = await fetch(d.url, {
        method: 'POST',
        // A redirect is the receiver's answer, not a new target: it fails the attempt.
        redirect: 'manual',
        dispatcher: this.#dispatcher,
        signal: AbortSignal.timeout(this.#opts.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Keygate-Webhooks/1',
          'keygate-event-id': d.eventId,
          'keygate-event-type': d.type,
          'keygate-delivery-attempt': String(d.attempts),
          [SIGNATURE_HEADER]: signatureHeader(secret, body, Math.floor(Date.now() / 1000)),
        },
        body,
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) {
        await this.#store.alerts.delivered(d.seq, res.status);
        return;
      }
      outcome = { status: res.status, error: `HTTP ${res.status}` };
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      if (cause === 'EGRESS_BLOCKED') {
        // Not retried, and nothing about the target: the delivery list must not become a port scanner.
        this.#logger.info('webhook delivery blocked by the egress policy', { endpointId: d.endpointId });
        await this.#store.alerts.attemptFailed(d.seq, { status: null, error: EGRESS_BLOCKED }, 0, 0);
        return;
      }
      outcome = { status: null, error: cause ?? (err as Error).name ?? 'request failed' };
    }
    const retryMs = Math.min(MAX_RETRY_MS, this.#opts.retryMs * 2 ** (d.attempts - 1));
    this.#logger.info('webhook delivery failed', {
      endpointId: d.endpointId,
      eventId: d.eventId,
      attempt: d.attempts,
      error: outcome.error,
    });
    await this.#store.alerts.attemptFailed(d.seq, outcome, retryMs, this.#opts.maxAttempts);
  }

  /** Stops polling and waits for deliveries in flight (claims left unfinished are retried after their lease). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#unlisten().catch(() => {});
    await this.#running;
    await this.#dispatcher.close();
  }
}
