import type { Hono } from 'hono';
import { z } from 'zod';
import { updateKey } from '../accounts/keys';
import { GatewayError } from '../lib/errors';
import { MODEL_PATTERN } from '../lib/model-policy';
import { parseOr400 } from '../lib/validation';
import type { DashboardDeps, DashboardEnv } from './env';
import { readForm } from './form';

const Target = z.object({
  subject: z.string().regex(/^(account|(member|group|key):[A-Za-z0-9_-]{1,100})$/, 'an unknown subject'),
  // Back to the page the form was on, never anywhere else.
  back: z
    .string()
    .regex(/^\/dashboard\/(settings|(members|groups|rbac-groups|keys)\/[A-Za-z0-9_-]{1,100})$/, 'not a page'),
});
const optionalCount = z
  .string()
  .trim()
  .transform((s, ctx) => {
    if (s === '') return undefined;
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1 || n > 100_000_000) {
      ctx.addIssue({ code: 'custom', message: 'a whole number from 1 to 100,000,000' });
      return z.NEVER;
    }
    return n;
  });
const SpendLimit = Target.extend({
  amount_usd: z.coerce.number().min(0).max(10_000_000),
  period: z.enum(['daily', 'weekly', 'monthly']),
  strict: z.literal('on').optional(),
});
const RateLimits = Target.extend({
  rpm: optionalCount.optional(),
  itpm: optionalCount.optional(),
  otpm: optionalCount.optional(),
});
const Policy = Target.extend({
  models: z
    .string()
    .trim()
    .max(2000)
    .transform((s) =>
      s === ''
        ? null
        : s
            .split(',')
            .map((m) => m.trim())
            .filter(Boolean),
    )
    .pipe(
      z
        .array(z.string().regex(MODEL_PATTERN, 'a model id, or a family pattern such as claude-sonnet-*'))
        .max(200)
        .nullable(),
    ),
  max_tokens: optionalCount.optional(),
});
const Remove = Target.extend({ rule: z.string().regex(/^(spl_[A-Za-z0-9]{1,60}|rpm|itpm|otpm|policy)$/) });

type Subject = { type: 'organization' | 'user' | 'rbac_group'; id: string } | { type: 'api_key'; id: string };

/** The forms of the "Limits and policies" section on the member, group, key and account pages. */
export function controlsPages(app: Hono<DashboardEnv>, deps: DashboardDeps): void {
  const admin = (c: { var: DashboardEnv['Variables'] }) => {
    const v = c.var.viewer;
    if (v.kind !== 'admin' || v.readOnly)
      throw new GatewayError('permission_error', 'Only an account admin can change limits and policies.');
    return { accountId: v.accountId, actor: v.keyId };
  };

  /** The subject the form names, checked to exist in the admin's account. */
  async function subjectOf(accountId: string, raw: string): Promise<Subject> {
    if (raw === 'account') return { type: 'organization', id: accountId };
    const [kind, id] = raw.split(':') as [string, string];
    if (kind === 'member') {
      const m = await deps.store.members.get(accountId, id);
      if (m?.status !== 'active') throw new GatewayError('not_found_error', `No active member '${id}'.`);
      return { type: 'user', id };
    }
    if (kind === 'group') {
      if (!(await deps.store.rbacGroups.get(accountId, id)))
        throw new GatewayError('not_found_error', `No group '${id}'.`);
      return { type: 'rbac_group', id };
    }
    const k = await deps.store.keys.get(accountId, id);
    if (!k || k.kind === 'admin') throw new GatewayError('not_found_error', `No app key '${id}'.`);
    return { type: 'api_key', id };
  }
  const done = (c: { redirect(to: string, status: 303): Response }, back: string) =>
    c.redirect(`${back}#limits`, 303);

  app.post('/controls/spend-limit', async (c) => {
    const who = admin(c);
    const b = parseOr400(SpendLimit, await readForm(c));
    const s = await subjectOf(who.accountId, b.subject);
    if (s.type === 'api_key')
      throw new GatewayError(
        'invalid_request_error',
        'Spend limits are set on a member, a group or the account; a key has a monthly spend cap.',
      );
    await deps.store.spendLimits.set(
      {
        accountId: who.accountId,
        scopeType: s.type,
        scopeId: s.id,
        period: b.period,
        amountCents: Math.round(b.amount_usd * 100),
        hold: b.strict ? 'ceiling' : 'expected',
      },
      who.actor,
    );
    return done(c, b.back);
  });

  app.post('/controls/rate-limits', async (c) => {
    const who = admin(c);
    const b = parseOr400(RateLimits, await readForm(c));
    const s = await subjectOf(who.accountId, b.subject);
    if (b.rpm === undefined && b.itpm === undefined && b.otpm === undefined)
      throw new GatewayError('invalid_request_error', 'Give at least one of the three rate limits.');
    if (s.type !== 'api_key') {
      const values = {
        ...(b.rpm !== undefined && { rpm: b.rpm }),
        ...(b.itpm !== undefined && { itpm: b.itpm }),
        ...(b.otpm !== undefined && { otpm: b.otpm }),
      };
      await deps.store.rateLimits.set(who.accountId, s, values, who.actor);
      return done(c, b.back);
    }
    await updateKey(deps, who, s.id, {
      ...(b.rpm !== undefined && { limitRpm: b.rpm }),
      ...(b.itpm !== undefined && { limitItpm: b.itpm }),
      ...(b.otpm !== undefined && { limitOtpm: b.otpm }),
    });
    return done(c, b.back);
  });

  app.post('/controls/policy', async (c) => {
    const who = admin(c);
    const b = parseOr400(Policy, await readForm(c));
    const s = await subjectOf(who.accountId, b.subject);
    await deps.store.rbacGroups.setPolicy(
      {
        accountId: who.accountId,
        subjectType: s.type,
        subjectId: s.id,
        allowedModels: b.models,
        maxTokens: b.max_tokens ?? null,
      },
      who.actor,
    );
    return done(c, b.back);
  });

  app.post('/controls/remove', async (c) => {
    const who = admin(c);
    const b = parseOr400(Remove, await readForm(c));
    const s = await subjectOf(who.accountId, b.subject);
    if (b.rule === 'policy') {
      if (!(await deps.store.rbacGroups.removePolicy(who.accountId, s.id, who.actor)))
        throw new GatewayError('not_found_error', 'This one has no model policy of its own.');
    } else if (b.rule.startsWith('spl_')) {
      const l = await deps.store.spendLimits.get(who.accountId, b.rule);
      if (!l || l.scopeId !== s.id)
        throw new GatewayError('not_found_error', `No spend limit '${b.rule}' here.`);
      await deps.store.spendLimits.remove(who.accountId, l.id, {
        actor: who.actor,
        action: 'spend_limit.delete',
        targetId: l.id,
      });
    } else if (s.type !== 'api_key') {
      await deps.store.rateLimits.set(who.accountId, s, { [b.rule]: null }, who.actor);
    } else {
      const field = { rpm: 'limitRpm', itpm: 'limitItpm', otpm: 'limitOtpm' }[b.rule as 'rpm'];
      await updateKey(deps, who, s.id, { [field]: null });
    }
    return done(c, b.back);
  });
}
