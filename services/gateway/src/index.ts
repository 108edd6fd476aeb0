export { createApp, type AppDeps } from './app';
export { loadConfig, ConfigError, type Config } from './config';
export { startGateway, type Gateway, type GatewayOptions } from './server';
export { createAccount, createKey, type NewAccount, type NewKey } from './accounts/service';
export { generateKey, parseKey, hashKey, type KeyKind } from './auth/keys';
export { openDatabase, type Database } from './store/database';
export { SecretBox } from './lib/secret-box';
export { createLogger, stderrSink, type Logger } from './lib/logger';
export type { CallRecord } from './lib/call-record';
