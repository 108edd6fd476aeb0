import { z } from 'zod';

/**
 * The provider's report dimensions and filters that have no counterpart in Keygate, with the
 * reason: a tool that asks for them gets a 400 saying so, not a report that silently ignores them.
 */
export const MISSING_DIMENSIONS: Record<string, string> = {
  workspace_id: 'Keygate has no workspaces (group by app or environment instead)',
  service_account_id: 'Keygate has no service accounts (keys belong to members, apps or environments)',
  service_tier: 'the rollups do not keep service tiers',
  context_window: 'the rollups do not keep context-window tiers',
  inference_geo: 'the gateway does not see inference regions',
  speed: 'the gateway does not see inference speeds',
};

/** The provider's filter parameters for those dimensions; the route refuses them by name. */
export const MISSING_FILTERS: Record<string, string> = {
  workspace_ids: MISSING_DIMENSIONS.workspace_id!,
  service_account_ids: MISSING_DIMENSIONS.service_account_id!,
  service_tiers: MISSING_DIMENSIONS.service_tier!,
  context_window: MISSING_DIMENSIONS.context_window!,
  inference_geos: MISSING_DIMENSIONS.inference_geo!,
  speeds: MISSING_DIMENSIONS.speed!,
};

/** `group_by[]` over the given dimensions; a provider dimension Keygate lacks is named in the 400. */
export function groupBy<const T extends readonly [string, ...string[]]>(dimensions: T) {
  const dimension = z.enum(dimensions, {
    error: (issue) => {
      const value = String(issue.input);
      const why = MISSING_DIMENSIONS[value];
      return why
        ? `'${value}' is not a dimension here: ${why}`
        : `unknown dimension '${value}' (expected one of ${dimensions.join(', ')})`;
    },
  });
  return z.array(dimension).optional();
}

const ids = z.array(z.string().min(1)).max(100).optional();

/**
 * Filters shared by the reports: the provider's `api_key_ids`, `models` and `account_ids`
 * (the provider's users are Keygate's members), Keygate's `user_ids` (the same members) and `group_ids`.
 */
export const reportFilters = {
  api_key_ids: ids,
  account_ids: ids,
  user_ids: ids,
  models: ids,
  group_ids: ids,
};

type FilterParams = { [K in keyof typeof reportFilters]?: string[] | undefined };

export function filtersOf(q: FilterParams) {
  const members = [...(q.account_ids ?? []), ...(q.user_ids ?? [])];
  return {
    keyIds: q.api_key_ids ?? null,
    memberIds: members.length ? members : null,
    models: q.models ?? null,
    groupIds: q.group_ids ?? null,
  };
}
