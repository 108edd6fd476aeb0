/** Who a model policy belongs to: the account, one of its groups, a member or a key. */
export type PolicySubject = 'organization' | 'rbac_group' | 'user' | 'service_account' | 'api_key';

/** One stored policy, as it applies to a key (the key resolver reads them with the key). */
export interface PolicyRule {
  subject: PolicySubject;
  subjectId: string;
  /** The group's name, the member's email or the key's name, for the refusal's message. */
  label: string;
  /** Exact model ids and `family-*` patterns; null allows any model. */
  allowedModels: string[] | null;
  maxTokens: number | null;
}

interface AllowList {
  rule: PolicyRule;
  exact: ReadonlySet<string>;
  prefixes: readonly string[];
}

/**
 * The model policy a key is under, compiled once when the key is resolved: every rule that
 * applies must allow a call (the account's, each of the member's groups', the member's, the
 * key's), so the strictest wins and a refusal can name the rule that refused.
 */
export interface ModelPolicy {
  readonly rules: readonly PolicyRule[];
  /** Null when the call fits the policy, else the message of its 400. */
  check(model: string, maxTokens: number | null): string | null;
  /** Whether `model` may be called at all (model discovery lists only these). */
  allows(model: string): boolean;
}

/** A valid allow-list entry: a model id, or a family prefix ending in `*`. */
export const MODEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}\*?$/;

const SUBJECT_WORDS: Record<PolicySubject, string> = {
  organization: "the account's model policy",
  rbac_group: 'the model policy of group',
  user: 'the model policy of member',
  service_account: 'the model policy of service account',
  api_key: 'the model policy of key',
};

/** How a refusal names the rule that refused. */
export function ruleName(r: PolicyRule): string {
  return r.subject === 'organization'
    ? SUBJECT_WORDS.organization
    : `${SUBJECT_WORDS[r.subject]} '${r.label}' (${r.subjectId})`;
}

/** Compiles the rules that apply to one key; null when none restricts anything (no cost per call). */
export function compilePolicy(rules: readonly PolicyRule[]): ModelPolicy | null {
  const lists: AllowList[] = [];
  let ceiling: PolicyRule | null = null;
  for (const rule of rules) {
    if (rule.allowedModels) {
      const exact = new Set<string>();
      const prefixes: string[] = [];
      for (const m of rule.allowedModels) {
        if (m.endsWith('*')) prefixes.push(m.slice(0, -1));
        else exact.add(m);
      }
      lists.push({ rule, exact, prefixes });
    }
    if (rule.maxTokens != null && (ceiling === null || rule.maxTokens < ceiling.maxTokens!)) ceiling = rule;
  }
  if (lists.length === 0 && ceiling === null) return null;
  // Answers per model, so a warm key pays a map lookup (bounded: model ids are few).
  const verdicts = new Map<string, AllowList | null>();
  const refusedBy = (model: string): AllowList | null => {
    const hit = verdicts.get(model);
    if (hit !== undefined) return hit;
    const found =
      lists.find((l) => !l.exact.has(model) && !l.prefixes.some((p) => model.startsWith(p))) ?? null;
    if (verdicts.size < 1_000) verdicts.set(model, found);
    return found;
  };
  return {
    rules,
    allows: (model) => refusedBy(model) === null,
    check(model, maxTokens) {
      const list = lists.length > 0 ? refusedBy(model) : null;
      if (list)
        return `model: '${model}' is not allowed by ${ruleName(list.rule)}, which allows ${list.rule.allowedModels!.length === 0 ? 'no model' : list.rule.allowedModels!.join(', ')}.`;
      if (ceiling && maxTokens !== null && maxTokens > ceiling.maxTokens!)
        return `max_tokens: ${maxTokens} is above the ceiling of ${ceiling.maxTokens} set by ${ruleName(ceiling)}.`;
      return null;
    },
  };
}
