import type { Prices } from '../pricing/prices';
import type { KeyResolver } from '../auth/resolver';
import type { AppEnv } from '../app-env';
import type { ServiceDeps } from '../accounts/service';
import type { AccountRecord } from '../tenancy/account-queries';
import type { BillingDeps } from '../billing/lifecycle';
import type { ViewState } from './view-state';
import type { MemberTokens } from '../identity/tokens';
import type { DashboardStore } from './install';

/** Who is signed in, and so whose rows they may see. */
export type Viewer =
  /** `readOnly`: the operator looking at one account's pages from the cross-account view. */
  | {
      kind: 'admin';
      accountId: string;
      keyId: string;
      memberId: string | null;
      csrf: string;
      readOnly?: boolean;
    }
  | { kind: 'member'; accountId: string; keyId: string; memberId: string; csrf: string }
  | { kind: 'operator'; csrf: string };

export type AccountViewer = Exclude<Viewer, { kind: 'operator' }>;

export interface DashboardDeps extends ServiceDeps {
  store: DashboardStore;
  /** The gateway's prices: every cost a page shows. */
  prices: Prices;
  resolver: KeyResolver;
  operatorToken: string | null;
  /** Writes pending last-use times, so the keys page shows them. */
  flushLastUsed?: () => Promise<void>;
  billing: BillingDeps;
  /** Sign-in through the account's identity provider. */
  identity?: MemberTokens;
}

export interface DashboardEnv {
  Bindings: AppEnv['Bindings'];
  /** `account`: the account the pages show (null on the operator's cross-account view). */
  Variables: AppEnv['Variables'] & {
    viewer: Viewer;
    state: ViewState;
    sessionHash: Buffer;
    account: AccountRecord | null;
  };
}
