import type { Dispatcher } from 'undici';
import type { EgressPolicy } from '../lib/egress';
import type { SecretBox } from '../lib/secret-box';
import type { Sql } from '../store/database';
import { UpstreamDirectory } from './directory';
import { upstreamQueries } from './queries';

/** The proxy's view of accounts' upstreams, as server.ts builds it. */
export function accountUpstreams(deps: {
  sql: Sql;
  box: SecretBox;
  egress: EgressPolicy;
  config: { upstreamUrl: string; upstreamTimeoutMs: number };
  dispatcher: Dispatcher;
}): UpstreamDirectory {
  return new UpstreamDirectory({
    queries: upstreamQueries(deps.sql),
    box: deps.box,
    providerUrl: deps.config.upstreamUrl,
    providerDispatcher: deps.dispatcher,
    egressDispatcher: deps.egress.dispatcher({ connectTimeoutMs: deps.config.upstreamTimeoutMs }),
  });
}
