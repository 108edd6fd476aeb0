import type { KeyResolver } from '../auth/resolver';
import type { AppEnv } from '../app-env';
import type { ServiceDeps } from '../admin/service';
import type { ViewState } from './view-state';

/** Who is signed in, and so whose rows they may see. */
export type Viewer =
  | { kind: 'admin'; accountId: string; keyId: string; memberId: string | null; csrf: string }
  | { kind: 'member'; accountId: string; keyId: string; memberId: string; csrf: string }
  | { kind: 'operator'; csrf: string };

export type AccountViewer = Exclude<Viewer, { kind: 'operator' }>;

export interface DashboardDeps extends ServiceDeps {
  resolver: KeyResolver;
  operatorToken: string | null;
  /** Writes pending last-use times, so the keys page shows them. */
  flushLastUsed?: () => Promise<void>;
}

export interface DashboardEnv {
  Bindings: AppEnv['Bindings'];
  Variables: AppEnv['Variables'] & { viewer: Viewer; state: ViewState; sessionHash: Buffer };
}
