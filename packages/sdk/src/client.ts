// By name, not the default: the official CommonJS build's module.exports is a factory function, not the class.
import { Anthropic, type APIError, type ClientOptions, type Middleware } from '@anthropic-ai/sdk';
import {
  checkExtraOptions,
  checkGroupId,
  newGroupId,
  processEnv,
  resolveAuth,
  resolveBaseURL,
  type KeygateOptions,
} from './options';
import { runToolLoop, type ToolLoopOptions, type ToolLoopResult, type ToolSpec } from './tool-loop';
import { resumeMiddleware, resumePolicy } from './resume';
import { UsageTap } from './usage-tap';
import { UsageTracker } from './usage-tracker';
import type { UsageRecord } from './usage-types';

export const VERSION = '0.1.0';

/**
 * The official Anthropic client, pointed at a Keygate gateway: every method, type and helper
 * of `@anthropic-ai/sdk` works unchanged. It authenticates with an app key (sent as
 * `Authorization: Bearer`, never as `x-api-key`) and records what every call consumed.
 *
 * @example
 * import Keygate from '@keygate/sdk';
 *
 * const client = new Keygate({ appKey: process.env.KEYGATE_APP_KEY, baseURL: 'https://keygate.example.com' });
 * const message = await client.messages.create({
 *   model: 'claude-sonnet-4-6',
 *   max_tokens: 1024,
 *   messages: [{ role: 'user', content: 'Hello' }],
 * });
 * console.log(client.usage.total().output_tokens);
 */
export class Keygate extends Anthropic {
  /** Running usage of this client and every copy made from it (`group()`, `withOptions()`). */
  readonly usage: UsageTracker;
  /** The request group every call of this client carries, or null. */
  readonly groupId: string | null;
  readonly #tap: UsageTap;
  readonly #backend: readonly Middleware[];

  /**
   * @param options Every option of the official client, plus `appKey` (default
   * `KEYGATE_APP_KEY`), `baseURL` (default `KEYGATE_BASE_URL`, else `http://127.0.0.1:8080`),
   * `onUsage`, `usage` and `groupId`. Throws a `KeygateError` when no app key is set or when a
   * provider key (`sk-ant-…`) or an admin key is given in its place.
   */
  constructor(options: KeygateOptions = {}) {
    const env = processEnv();
    const { appKey: _appKey, onUsage, usage, groupId, resumeStreams, ...official } = options;
    const auth = resolveAuth(options, env);
    const baseURL = resolveBaseURL(options, env);
    checkExtraOptions({ ...options, baseURL });
    const tracker = usage ?? new UsageTracker();
    // Keygate's own options ride along in the official client's `_options`, so `withOptions()`
    // copies (and so `group()`) share the tracker and keep the hook and group.
    const forwarded: KeygateOptions = {
      ...official,
      apiKey: auth.apiKey,
      authToken: auth.authToken,
      baseURL,
      usage: tracker,
      onUsage,
      groupId,
      resumeStreams,
    };
    super(forwarded as ClientOptions);
    this.usage = tracker;
    this.groupId = groupId ?? null;
    this.#tap = new UsageTap({
      groupId: this.groupId,
      maxRetries: (request) => request.maxRetries ?? this.maxRetries,
      deliver: (record) => this.#deliver(record, onUsage),
    });
    // The tap outside the resumption: it reads one stream however many connections carried it.
    this.#backend = [this.#tap.middleware, resumeMiddleware(resumePolicy(resumeStreams))];
  }

  /**
   * A copy of this client whose calls all carry `keygate-group-id: <id>`, so the gateway reports
   * them as one logical action. It shares this client's usage tracker.
   *
   * @param id The group id (1 to 128 visible ASCII characters); generated when omitted.
   * @example
   * const task = client.group();              // or client.group('invoice-1234')
   * await task.messages.create({ model, max_tokens: 512, messages });
   * await task.messages.create({ model, max_tokens: 512, messages: followUp });
   * client.usage.group(task.groupId!);          // totals of both calls
   */
  group(id?: string): this {
    return this.withOptions({ groupId: checkGroupId(id ?? newGroupId()) });
  }

  /** As the official `withOptions()`, also taking Keygate's options (`appKey` replaces the key). */
  override withOptions(options: Partial<KeygateOptions>): this {
    const { appKey, ...rest } = options;
    return super.withOptions(appKey === undefined ? rest : { ...rest, authToken: appKey });
  }

  /**
   * Runs model ↔ tool round trips in one request group until the model stops asking for tools.
   * See {@link runToolLoop}.
   *
   * @example
   * const { message, usage } = await client.runToolLoop({
   *   model: 'claude-sonnet-4-6',
   *   messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
   *   tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: z.object({ city: z.string() }) }],
   *   handlers: { get_weather: async ({ city }) => `18°C and clear in ${city}` },
   * });
   */
  runToolLoop<const T extends readonly ToolSpec[]>(options: ToolLoopOptions<T>): Promise<ToolLoopResult> {
    return runToolLoop(this, options);
  }

  protected override _shouldResolveDefaultCredentials(): boolean {
    // Local Anthropic profiles and OAuth credentials belong to the provider, never to a gateway.
    return false;
  }

  protected override backendMiddleware(): ReadonlyArray<Middleware> {
    return this.#backend;
  }

  protected override makeStatusError(
    status: number,
    error: object,
    message: string | undefined,
    headers: Headers,
  ): APIError {
    // Only called once the SDK has decided not to retry: the attempt it reports is the call's last.
    this.#tap.settleStatusError(headers);
    return super.makeStatusError(status, error, message, headers);
  }

  protected override getUserAgent(): string {
    return `${super.getUserAgent()} Keygate/JS ${VERSION}`;
  }

  #deliver(record: UsageRecord, onUsage: KeygateOptions['onUsage']): void {
    this.usage.add(record);
    if (!onUsage) return;
    try {
      onUsage(record);
    } catch (error) {
      this.logger.warn('keygate: onUsage threw; the call itself is unaffected', error);
    }
  }
}
