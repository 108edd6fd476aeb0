import type { Principal } from '../auth/resolver';
import type { BudgetBook } from '../budgets/book';
import type { ScopeRateLimitRecord } from '../budgets/rate-limit-queries';

/** Who a rate limit belongs to: the key, its member, one of the member's groups, or the account. */
export type SubjectScope = 'api_key' | 'user' | 'rbac_group' | 'organization';

/** Per-minute limits; null: none of that kind. `tpm` (input and output together) is a key's only. */
export interface Limits {
  rpm: number | null;
  itpm: number | null;
  otpm: number | null;
  tpm: number | null;
}

export interface LimitSubject {
  scope: SubjectScope;
  id: string;
  limits: Limits;
  /** `plan`: the plan's default for members, not set by anyone. */
  source: 'set' | 'plan';
}

interface Memo {
  rows: readonly ScopeRateLimitRecord[];
  subjects: readonly LimitSubject[];
}

const NONE: readonly LimitSubject[] = [];

/**
 * The rate limits a call is under: its key's (on the key's record, from the key cache), its
 * member's (their own, else the plan's member default), each of the member's groups' and the
 * account's, from `book` (each account's rows in memory, read again only after a
 * `budgets:<account>` change or the book's TTL). Worked out once per principal and book entry:
 * a warm key's call costs a map lookup here, no database round trip and no allocation.
 */
export class RateSubjects {
  readonly #book: BudgetBook<ScopeRateLimitRecord>;
  readonly #memo = new WeakMap<Principal, Memo>();

  constructor(book: BudgetBook<ScopeRateLimitRecord>) {
    this.#book = book;
  }

  of(p: Principal): readonly LimitSubject[] | Promise<readonly LimitSubject[]> {
    const rows = this.#book.of(p.account.id);
    return rows instanceof Promise ? rows.then((r) => this.#from(p, r)) : this.#from(p, rows);
  }

  #from(p: Principal, rows: readonly ScopeRateLimitRecord[]): readonly LimitSubject[] {
    const memo = this.#memo.get(p);
    if (memo?.rows === rows) return memo.subjects;
    const subjects = subjectsOf(p, rows);
    this.#memo.set(p, { rows, subjects });
    return subjects;
  }
}

export function subjectsOf(p: Principal, rows: readonly ScopeRateLimitRecord[]): readonly LimitSubject[] {
  const k = p.key;
  const out: LimitSubject[] = [];
  if (k.limitRpm != null || k.limitItpm != null || k.limitOtpm != null || k.limitTpm != null)
    out.push({
      scope: 'api_key',
      id: k.id,
      limits: { rpm: k.limitRpm, itpm: k.limitItpm, otpm: k.limitOtpm, tpm: k.limitTpm },
      source: 'set',
    });
  if (rows.length === 0) return out.length === 0 ? NONE : out;
  const member = k.memberId;
  const groups = p.groupIds ?? [];
  let own: ScopeRateLimitRecord | undefined;
  let planDefault: ScopeRateLimitRecord | undefined;
  for (const r of rows) {
    if (r.scopeType === 'organization') out.push(subject('organization', r));
    else if (r.scopeType === 'rbac_group' && groups.includes(r.scopeId)) out.push(subject('rbac_group', r));
    else if (r.scopeType === 'user' && member != null) {
      if (r.scopeId === member) own = r;
      else if (r.scopeId === '*') planDefault = r;
    }
  }
  const forMember = own ?? planDefault;
  if (forMember && member != null) out.push({ ...subject('user', forMember), id: member });
  return out;
}

const subject = (scope: SubjectScope, r: ScopeRateLimitRecord): LimitSubject => ({
  scope,
  id: r.scopeId,
  limits: { rpm: r.rpm, itpm: r.itpm, otpm: r.otpm, tpm: null },
  source: r.source,
});
