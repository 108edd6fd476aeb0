import type { AppEnv } from '../app-env';

/** Whose data a request of the account API may touch, and who to name in the audit log. */
export interface Scope {
  accountId: string;
  /** The admin key's id, or `operator` / `cli` when the operator API acts for an account. */
  actor: string;
}

/** The app's environment plus the scope the account API runs in. */
export interface AdminEnv {
  Bindings: AppEnv['Bindings'];
  Variables: AppEnv['Variables'] & { scope: Scope };
}
