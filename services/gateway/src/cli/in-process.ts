import type { Config } from '../config';
import { StartupError } from '../lib/data-dir';
import { openRuntime } from '../runtime';
import { CliError, type Send } from './backend';

/** The operator API served in-process on the store the CLI opens itself (no gateway owns the database). */
export async function inProcessApi(config: Config) {
  const opening = openRuntime(config, { owner: 'the keygate CLI' }).catch((err) => {
    throw err instanceof StartupError ? new CliError(err.message) : err;
  });
  // The operator API's code loads while the database starts.
  const [
    rt,
    { operatorRoutes },
    { plainBilling },
    { createLogger },
    { MemberTokens },
    { EgressPolicy },
    { federationAdminRoutes },
    { upstreamRoutes },
    { PriceBook, readPriceFile },
    { claudeCodeEnvRoutes },
  ] = await Promise.all([
    opening,
    import('../operator/routes'),
    import('../billing/setup'),
    import('../lib/logger'),
    import('../identity/tokens'),
    import('../lib/egress'),
    import('../federation/admin-routes'),
    import('../upstreams/routes'),
    import('../pricing/catalog/price-book'),
    import('../claude-gateway/env-routes'),
  ]);
  const token = rt.operatorToken ?? 'cli-in-process-operator-token';
  const logger = createLogger(config.logLevel);
  const egress = new EgressPolicy(config.egressAllow);
  const identity = new MemberTokens({
    store: rt.store,
    box: rt.box,
    egress,
    clock: Date.now,
    tokenTtlMs: config.memberTokenTtlMs,
    refreshIdleMs: config.idpRefreshIdleMs,
    publicUrl: config.publicUrl,
  });
  const prices = new PriceBook(rt.store, readPriceFile(config.priceFile));
  await prices.reload();
  const app = operatorRoutes({
    store: rt.store,
    box: rt.box,
    clock: Date.now,
    operatorToken: token,
    prices,
    trialDays: config.trialDays,
    logger,
    billing: plainBilling(rt.store, Date.now, config.paymentGraceDays, config.billingEnforced),
    // `keygate idp set` discovers the issuer, through the same egress policy as the gateway.
    identity,
    scimTokens: rt.store.scim,
    capabilityRoutes: [
      federationAdminRoutes({ store: rt.store }),
      // `keygate upstream add` checks the base URL against the same egress policy as the gateway.
      upstreamRoutes({
        store: rt.store,
        box: rt.box,
        clock: Date.now,
        webhooks: { egress, maxEndpoints: config.webhooks.maxEndpoints },
      }),
      claudeCodeEnvRoutes({ store: rt.store }),
    ],
  });
  const via = config.databaseUrl
    ? `PostgreSQL${config.dbSchema ? ` (schema ${config.dbSchema})` : ''}`
    : `the embedded database in ${config.dataDir}`;
  const send: Send = async (method, path, headers, body) => {
    const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
    return { status: res.status, text: await res.text() };
  };
  const close = async () => {
    await identity.oidc.close();
    await rt.close();
  };
  return { via, token, send, close };
}
