import { AnthropicError } from '@anthropic-ai/sdk';

export type KeygateErrorCode =
  | 'missing_app_key'
  | 'provider_key'
  | 'admin_key'
  | 'invalid_option'
  | 'unsupported_option'
  | 'missing_handler'
  | 'duplicate_tool'
  | 'invalid_tool_schema';

/**
 * A mistake in how the SDK is used (configuration, tool definitions), raised before any
 * request is sent. It extends the official SDK's `AnthropicError`, so code that catches
 * that keeps working.
 *
 * @example
 * try {
 *   new Keygate({ appKey: process.env.ANTHROPIC_API_KEY });
 * } catch (err) {
 *   if (err instanceof KeygateError && err.code === 'provider_key') console.error(err.message);
 * }
 */
export class KeygateError extends AnthropicError {
  override readonly name = 'KeygateError';

  constructor(
    readonly code: KeygateErrorCode,
    message: string,
  ) {
    super(message);
  }
}
