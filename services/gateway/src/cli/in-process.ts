import { plainBilling } from '../billing/setup';
import type { Config } from '../config';
import { StartupError } from '../lib/data-dir';
import { createLogger } from '../lib/logger';
import { operatorRoutes } from '../operator/routes';
import { openRuntime } from '../runtime';
import { CliError } from './backend';

/** The operator API served in-process on the store the CLI opens itself (no gateway owns the database). */
export async function inProcessApi(config: Config) {
  const rt = await openRuntime(config, { owner: 'the keygate CLI' }).catch((err) => {
    throw err instanceof StartupError ? new CliError(err.message) : err;
  });
  const token = rt.operatorToken ?? 'cli-in-process-operator-token';
  const logger = createLogger(config.logLevel);
  const app = operatorRoutes({ store: rt.store, box: rt.box, clock: Date.now, operatorToken: token, trialDays: config.trialDays, logger, billing: plainBilling(rt.store, Date.now, config.paymentGraceDays) });
  const via = config.databaseUrl ? `PostgreSQL${config.dbSchema ? ` (schema ${config.dbSchema})` : ''}` : `the embedded database in ${config.dataDir}`;
  return { via, token, send: async (path: string, init: RequestInit) => app.request(path, init), close: () => rt.close() };
}
