export { ERROR_STATUS, type ErrorType } from './errors';
export { type CacheWrites, cacheWrites, overlayUsage, type ProviderUsage } from './usage';
export { JsonUsageTap, SseUsageTap, TapResult } from './usage-tap';
export {
  BYTES_PER_OUTPUT_TOKEN,
  estimateOutputTokens,
  settleUsage,
  type StreamUsageFacts,
} from './output-estimate';
export { eventName, SseFramer } from './sse-framer';
export { FILES_BETA, namesBeta, SKILLS_BETA } from './beta-forms';
