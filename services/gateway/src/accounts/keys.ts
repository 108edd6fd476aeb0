import { generateKey, hashKey, keyHint, type KeyKind } from '../auth/keys';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { AuditEntry } from '../tenancy/audit-queries';
import type { KeyPatch, KeyRecord } from '../tenancy/key-queries';
import type { Scope } from './scope';
import type { ServiceDeps } from './service';

export interface NewKey {
  accountId: string;
  kind: KeyKind;
  name?: string | null;
  memberId?: string | null;
  app?: string | null;
  environment?: string | null;
  expiresAt?: Date | null;
  limitRpm?: number | null;
  limitTpm?: number | null;
  limitItpm?: number | null;
  limitOtpm?: number | null;
  limitMonthlySpendCents?: number | null;
  /** Streaming Messages calls keep their events for a resume without asking (see KeyRecord). */
  resumableStreams?: boolean;
  /** Who created it (an admin key id, `operator` or `cli`); also the audit log's actor. */
  createdBy?: string | null;
  /**
   * Limits left unsaid (undefined, not null) take the account plan's default per-key limits
   * (the store applies them to every key that can call models); null says "no limit". `false`
   * reads every unsaid limit as null.
   */
  planDefaults?: boolean;
}

const MAX_GRACE_SECONDS = 7 * 86_400;

const adminStreams = () =>
  new GatewayError(
    'invalid_request_error',
    'resumable_streams: admin keys cannot call models, so they have no streams to resume.',
  );

const LIMIT_FIELDS = ['limitRpm', 'limitTpm', 'limitItpm', 'limitOtpm', 'limitMonthlySpendCents'] as const;

/** The limits said (undefined ones the store takes from the plan, unless `planDefaults` is false; none for admin keys). */
function limitsOf(input: NewKey): Partial<Record<(typeof LIMIT_FIELDS)[number], number | null>> {
  const out: Partial<Record<(typeof LIMIT_FIELDS)[number], number | null>> = {};
  for (const f of LIMIT_FIELDS) {
    const v = input[f];
    if (v !== undefined) out[f] = v;
    else if (input.planDefaults === false || input.kind === 'admin') out[f] = null;
  }
  return out;
}

const notFound = (id: string) => new GatewayError('not_found_error', `No API key with id '${id}'.`);

/** Creates a key; the secret exists only in the return value and is stored as SHA-256. */
export async function createKey(
  deps: ServiceDeps,
  input: NewKey,
): Promise<{ key: KeyRecord; secret: string }> {
  const member = input.memberId ? await deps.store.members.get(input.accountId, input.memberId) : null;
  if (input.memberId) {
    if (member?.status !== 'active')
      throw new GatewayError(
        'not_found_error',
        `member_id: no active member '${input.memberId}' in this account.`,
      );
    if (input.kind === 'admin' && member.role !== 'admin') {
      throw new GatewayError(
        'invalid_request_error',
        `member_id: '${member.id}' is a developer; admin keys belong to admin members (or to no member).`,
      );
    }
  }
  const limited = LIMIT_FIELDS.some((f) => input[f] != null);
  if (input.kind === 'admin' && limited)
    throw new GatewayError(
      'invalid_request_error',
      'limits: admin keys cannot call models, so they take no limits.',
    );
  if (input.kind === 'admin' && input.resumableStreams) throw adminStreams();
  if (input.expiresAt && input.expiresAt.getTime() <= deps.clock())
    throw new GatewayError('invalid_request_error', 'expires_at: must be in the future.');
  const secret = generateKey(input.kind);
  const draft = {
    id: newId('key'),
    accountId: input.accountId,
    memberId: input.memberId ?? null,
    kind: input.kind,
    name: input.name ?? defaultKeyName(input, member?.email ?? null),
    app: input.app ?? null,
    environment: input.environment ?? null,
    hint: keyHint(secret),
    expiresAt: input.expiresAt ?? null,
    ...limitsOf(input),
    resumableStreams: input.resumableStreams ?? false,
    createdBy: input.createdBy ?? null,
  };
  const key = await deps.store.keys.create(
    draft,
    hashKey(secret),
    createdAudit(draft, input.createdBy ?? 'operator'),
  );
  return { key, secret };
}

export function createdAudit(
  k: Pick<KeyRecord, 'id' | 'kind' | 'name' | 'memberId' | 'app' | 'environment'>,
  actor: string,
): AuditEntry {
  return {
    actor,
    action: 'api_key.create',
    targetId: k.id,
    details: { kind: k.kind, name: k.name, member_id: k.memberId, app: k.app, environment: k.environment },
  };
}

/** A key's name when none is given: what it is for, so a list of keys reads apart ("live key of alice@acme.test for web/prod"). */
export function defaultKeyName(
  k: Pick<NewKey, 'kind' | 'app' | 'environment'>,
  member: string | null,
): string {
  const scope = [k.app, k.environment].filter(Boolean).join('/');
  return `${k.kind} key${member ? ` of ${member}` : ''}${scope ? ` for ${scope}` : ''}`;
}

/** Renames, changes status or limits; an archived key stays archived. Effective everywhere at once. */
export async function updateKey(
  deps: ServiceDeps,
  scope: Scope,
  id: string,
  patch: KeyPatch,
): Promise<KeyRecord> {
  const current = await deps.store.keys.get(scope.accountId, id);
  if (!current) throw notFound(id);
  if (current.status === 'archived' && patch.status && patch.status !== 'archived') {
    throw new GatewayError(
      'invalid_request_error',
      'status: an archived key cannot be reactivated; create a new key instead.',
    );
  }
  if (current.kind === 'admin' && LIMIT_FIELDS.some((f) => patch[f] != null)) {
    throw new GatewayError(
      'invalid_request_error',
      'limits: admin keys cannot call models, so they take no limits.',
    );
  }
  if (current.kind === 'admin' && patch.resumableStreams) throw adminStreams();
  if (patch.expiresAt && patch.expiresAt.getTime() <= deps.clock())
    throw new GatewayError('invalid_request_error', 'expires_at: must be in the future.');
  const updated = await deps.store.keys.update(scope.accountId, id, patch, (before) => {
    const entries: AuditEntry[] = [];
    if (patch.status && patch.status !== before.status) {
      entries.push({
        actor: scope.actor,
        action: 'api_key.status_change',
        targetId: id,
        details: { from: before.status, to: patch.status },
      });
    }
    const changed = Object.keys(patch).filter((f) => f !== 'status');
    if (changed.length)
      entries.push({
        actor: scope.actor,
        action: 'api_key.update',
        targetId: id,
        details: auditPatch(patch),
      });
    return entries;
  });
  if (!updated) throw notFound(id);
  deps.evict?.invalidateKey(id);
  return updated;
}

function auditPatch(p: KeyPatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if ('name' in p) out.name = p.name;
  if ('expiresAt' in p) out.expires_at = p.expiresAt?.toISOString() ?? null;
  if ('limitRpm' in p) out.requests_per_minute = p.limitRpm;
  if ('limitTpm' in p) out.tokens_per_minute = p.limitTpm;
  if ('limitItpm' in p) out.input_tokens_per_minute = p.limitItpm;
  if ('limitOtpm' in p) out.output_tokens_per_minute = p.limitOtpm;
  if ('limitMonthlySpendCents' in p) out.monthly_spend_cap_cents = p.limitMonthlySpendCents;
  if ('resumableStreams' in p) out.resumable_streams = p.resumableStreams;
  return out;
}

/**
 * A new secret for the same key id; the old one keeps working for `graceSeconds` (default 0),
 * until `previousExpiresAt` as the database enforces it.
 */
export async function rotateKey(
  deps: ServiceDeps,
  scope: Scope,
  id: string,
  graceSeconds = 0,
): Promise<{ key: KeyRecord; secret: string; previousExpiresAt: Date | null }> {
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
    throw new GatewayError(
      'invalid_request_error',
      `grace_period_seconds: a whole number from 0 to ${MAX_GRACE_SECONDS} (7 days).`,
    );
  }
  const current = await deps.store.keys.get(scope.accountId, id);
  if (!current) throw notFound(id);
  if (current.status === 'archived')
    throw new GatewayError(
      'invalid_request_error',
      'This key is archived; create a new key instead of rotating it.',
    );
  const secret = generateKey(current.kind);
  const rotated = await deps.store.keys.rotate(
    scope.accountId,
    id,
    { hash: hashKey(secret), hint: keyHint(secret) },
    graceSeconds * 1000,
    {
      actor: scope.actor,
      action: 'api_key.rotate',
      targetId: id,
      details: { grace_period_seconds: graceSeconds },
    },
  );
  if (!rotated) throw notFound(id);
  deps.evict?.invalidateKey(id);
  return { ...rotated, secret };
}

/** Deletes a key: refused everywhere at once; its usage stays in reports under its id. */
export async function deleteKey(deps: ServiceDeps, scope: Scope, id: string): Promise<KeyRecord> {
  const key = await deps.store.keys.remove(scope.accountId, id, {
    actor: scope.actor,
    action: 'api_key.delete',
    targetId: id,
  });
  if (!key) throw notFound(id);
  deps.evict?.invalidateKey(id);
  return key;
}
