export { startEmulator } from './emulator';
export { createEmulatorHandler, DEFAULT_ADMIN_KEY, DEFAULT_API_KEY } from './router';
export { apiKeyId } from './admin-reports';
export {
  countTokens,
  type TokenCountable,
  TOKENS_PER_IMAGE,
  TOKENS_PER_MESSAGE,
  TOKENS_PER_PDF_PAGE,
  TOKENS_PER_REMOTE_DOCUMENT,
} from './tokens';
export { Ledger } from './ledger';
export { PromptCache, type CacheSplit } from './cache';
export { SCENARIOS, type ScenarioName } from './scenarios';
export { MODELS, MODEL_ALIASES, MODEL_DATA, modelData, type ModelInfo, type ModelData } from './models';
export { listPriceCents } from './pricing';
export type {
  CacheCreation,
  Emulator,
  EmulatorHandler,
  EmulatorOptions,
  Endpoint,
  HandlerOptions,
  LedgerEntry,
  MessagesBody,
  ReceivedRequest,
  RequestListener,
  ServerToolUsage,
  Usage,
} from './types';
export {
  startCloudEmulator,
  type CloudAuth,
  type CloudEmulator,
  type CloudFault,
  type CloudKind,
  type CloudOptions,
  type CloudReceived,
} from './cloud';
export type { GoogleServiceAccountAuth } from './google-tokens';
