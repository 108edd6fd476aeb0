/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Hono, type Context } from 'hono';
import { csrf } from 'hono/csrf';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import { createKey, deleteKey, rotateKey, updateKey } from '../accounts/keys';
import { updateAccount } from '../accounts/service';
import { UTC } from '../reports/time-zone';
import { errorResponse, GatewayError, knownError } from '../lib/errors';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import { parseOr400, refuseNulInUrl } from '../lib/validation';
import { standingBanner } from '../billing/view';
import { loadAssets } from './assets';
import { billingPages } from './billing-routes';
import { budgetPages } from './budget-routes';
import { reconcilePages } from './reconcile-routes';
import { spendLimitPages } from './spend-limit-routes';
import { controlsPages } from './controls-routes';
import { StandingBanner } from './components/billing-banner';
import { PeriodPicker } from './components/controls';
import { Layout } from './components/layout';
import type { DashboardDeps, DashboardEnv } from './env';
import { Guides } from './guides';
import { callsPage } from './pages/calls';
import { guidePage, guidesPage } from './pages/guides';
import { claudeCodePage } from './pages/claude-code';
import { groupPage, groupsPage } from './pages/groups';
import { rbacGroupPage } from './pages/rbac-group';
import { keyPage, keysPage } from './pages/keys';
import { memberPage, membersPage } from './pages/members';
import { modelsPage } from './pages/models';
import { settingsPage } from './pages/settings';
import { requireKeyRights } from './key-rights';
import { operatorPage } from './pages/operator';
import { overviewPage } from './pages/overview';
import { pageCtx, type PageCtx, type PageResult } from './pages/page';
import { ErrorPage, SignInPage } from './pages/sign-in';
import { endSession, sessionAuth } from './session';
import { signIn, signInToken } from './sign-in';
import { idpSignInRoutes } from './idp-sign-in';
import { idpSettingsPages } from './idp-settings';
import { securityHeaders } from './security-headers';
import { SignInLimiter } from './sign-in-limiter';
import { csvResponse } from './table';
import { parseState, queryOf, rangeOf } from './view-state';
import { whoLabel } from './who';
import { readForm } from './form';

const label = z
  .string()
  .trim()
  .max(100)
  .optional()
  .transform((s) => s || null);
const CreateKey = z.object({
  name: label,
  kind: z.enum(['live', 'test']),
  member_id: label,
  app: label,
  environment: label,
  /** A checkbox: present ('on') when ticked. */
  resumable_streams: z.literal('on').optional(),
});
const Streams = z.object({ resumable_streams: z.enum(['on', 'off']) });
const Rotate = z.object({
  grace_period_seconds: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 86_400),
});

const Settings = z.object({
  time_zone: z.string().trim().min(1).max(100),
  members_manage_own_keys: z.literal('on').optional(),
});

const idOf = (c: Context) => c.req.param('id') ?? '';

const SECURITY_HEADERS = securityHeaders();

/** The dashboard: server-rendered pages over the same report and account functions as the APIs. */
export function dashboardRoutes(deps: DashboardDeps & { upstreamUrl?: string }): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>();
  const assets = loadAssets();
  const limiter = new SignInLimiter({
    maxPerAddress: 20,
    maxPerPrefix: 5,
    windowMs: 15 * 60_000,
    clock: deps.clock,
  });

  app.onError((thrown, c) => {
    const err = knownError(thrown);
    if (!err) throw thrown;
    if (c.req.query('format') === 'csv') return errorResponse(err, c.var.requestId);
    for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
    return c.html(<ErrorPage status={err.status} message={err.message} />, err.status as 400);
  });

  app.get('/assets/:file', (c) => {
    const asset = assets.get(c.req.param('file'));
    if (!asset) throw new GatewayError('not_found_error', 'No such asset.');
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=3600',
    });
  });

  app.use('*', async function securityHeaders(c, next) {
    await next();
    // A page may widen its own policy (the billing page's redirects to Stripe); the rest get these.
    if (!c.req.path.startsWith('/dashboard/assets/'))
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!c.res.headers.has(k)) c.header(k, v);
  });
  app.use('/sign-in', bodyReader(BODIES.signIn));
  app.use('*', bodyReader(BODIES.dashboardForm));
  const sameOrigin = csrf();
  app.use('*', async function refuseCrossSite(c, next) {
    let passed = false;
    try {
      await sameOrigin(c, async () => {
        passed = true;
      });
    } catch (err) {
      if (!(err instanceof HTTPException)) throw err;
    }
    if (!passed) {
      // An expected refusal, not a fault: a line at info, no stack.
      c.var.logger.info('cross-site form post refused', { path: c.req.path });
      throw new GatewayError(
        'permission_error',
        'Cross-site form posts are refused: use the dashboard itself.',
      );
    }
    await next();
  });
  app.use('*', refuseNulInUrl());

  /** The account named by `?account=` and its provider's name, for the "Sign in with <provider>" button. */
  const companySignIn = async (c: Context) => {
    const account = c.req.query('account');
    const idp = account && deps.identity ? await deps.identity.store.identity.provider(account) : null;
    return idp ? { accountId: idp.accountId, name: idp.name } : null;
  };
  if (deps.identity) app.route('/', idpSignInRoutes(deps, deps.identity));
  app.get('/sign-in', async (c) => {
    const idp = await companySignIn(c);
    const asked = c.req.query('account') !== undefined;
    const error = asked && !idp ? 'That account has not connected a company identity provider.' : undefined;
    return c.html(
      <SignInPage csrf={signInToken(c)} idp={idp} sso={!!deps.identity} {...(error ? { error } : {})} />,
      error ? 404 : 200,
    );
  });
  app.post('/sign-in', async (c) => {
    try {
      await signIn(c, deps, limiter);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
      return c.html(
        <SignInPage csrf={signInToken(c)} error={err.message} idp={null} sso={!!deps.identity} />,
        err.status as 401,
      );
    }
    return c.redirect('/dashboard', 303);
  });

  app.use('*', sessionAuth(deps.store, deps.operatorToken));
  app.use('*', async function viewState(c, next) {
    const state = parseState(c.req.query());
    let viewer = c.var.viewer;
    if (viewer.kind !== 'operator') state.account = undefined;
    else if (state.account)
      viewer = {
        kind: 'admin',
        accountId: state.account,
        keyId: 'operator',
        memberId: null,
        csrf: viewer.csrf,
        readOnly: true,
      };
    const account = viewer.kind === 'operator' ? null : await deps.store.accounts.get(viewer.accountId);
    if (viewer.kind !== 'operator' && !account)
      throw new GatewayError('not_found_error', `No account '${viewer.accountId}'.`);
    // Read-only holds on the server for every route: no form post changes anything from here.
    if (viewer.kind === 'admin' && viewer.readOnly && c.req.method !== 'GET' && c.req.method !== 'HEAD')
      throw new GatewayError(
        'permission_error',
        "The operator's view of an account is read-only: use the operator API or CLI to change it.",
      );
    c.set('viewer', viewer);
    c.set('state', state);
    c.set('account', account);
    await next();
  });

  app.post('/sign-out', async (c) => {
    await endSession(c, deps.store);
    return c.redirect('/dashboard/sign-in', 303);
  });

  const render = async (c: Context<DashboardEnv>, page: PageResult) => {
    if (c.req.query('format') === 'csv')
      return csvResponse(
        c,
        page.tables,
        c.req.query('table'),
        page.title.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
      );
    const who = await whoLabel(deps, c.var.viewer);
    const state = c.var.state;
    const zone = c.var.account?.timeZone ?? UTC;
    const rangeLabel = rangeOf(state, deps.clock(), zone).label;
    const standing =
      c.var.viewer.kind === 'operator' ? null : await standingBanner(deps.billing, c.var.viewer.accountId);
    return c.html(
      <Layout
        title={page.title}
        viewer={c.var.viewer}
        state={state}
        section={page.section}
        who={who}
        zone={zone}
      >
        {standing && <StandingBanner {...standing} />}
        {!page.periodless && (
          <PeriodPicker path={c.req.path} state={state} rangeLabel={rangeLabel} zone={zone} />
        )}
        {page.body}
      </Layout>,
      page.status ?? 200,
    );
  };
  const page =
    (build: (p: PageCtx, c: Context<DashboardEnv>) => Promise<PageResult>) =>
    async (c: Context<DashboardEnv>) =>
      render(c, await build(pageCtx(c, deps), c));
  const rights = (p: PageCtx, keyId?: string) => requireKeyRights(deps, p.viewer, p.c.var.account, keyId);

  app.get('/', async (c) => {
    if (c.var.viewer.kind !== 'operator') return render(c, await overviewPage(pageCtx(c, deps)));
    const url = new URL(c.req.url);
    const csv = (id: string) =>
      `${url.pathname}${queryOf(c.var.state) || '?'}${queryOf(c.var.state) ? '&' : ''}format=csv&table=${id}`;
    const view = await operatorPage(
      deps,
      rangeOf(c.var.state, deps.clock()),
      csv,
      (id) => `/dashboard${queryOf(c.var.state, { account: id })}`,
    );
    return render(c, { title: 'Accounts (operator)', section: '/dashboard', ...view });
  });
  billingPages(app, deps, render);
  budgetPages(app, deps, render);
  reconcilePages(app, deps, render);
  idpSettingsPages(app, deps, render);
  spendLimitPages(app, deps, render);
  controlsPages(app, deps);
  // README.md and docs/ as pages, read at the first visit.
  let guides: Guides | undefined;
  app.get('/guides', (c) => render(c, guidesPage((guides ??= new Guides()))));
  app.get('/guides/:slug{.+}', (c) => render(c, guidePage((guides ??= new Guides()), c.req.param('slug'))));
  app.get(
    '/members',
    page((p) => membersPage(p)),
  );
  app.get(
    '/members/:id',
    page((p, c) => memberPage(p, idOf(c))),
  );
  app.get(
    '/keys',
    page((p) => keysPage(p)),
  );
  app.get(
    '/keys/:id',
    page((p, c) => keyPage(p, idOf(c))),
  );
  app.get(
    '/groups',
    page((p) => groupsPage(p)),
  );
  app.get(
    '/groups/:id',
    page((p, c) => groupPage(p, idOf(c))),
  );
  app.get(
    '/rbac-groups/:id',
    page((p, c) => rbacGroupPage(p, idOf(c))),
  );
  app.get(
    '/claude-code',
    page((p) => claudeCodePage(p)),
  );
  app.get(
    '/calls',
    page((p) => callsPage(p)),
  );
  app.get(
    '/models',
    page((p) => modelsPage(p)),
  );
  app.get(
    '/settings',
    page((p) => settingsPage(p)),
  );
  app.post(
    '/settings',
    page(async (p, c) => {
      if (p.viewer.kind !== 'admin' || p.viewer.readOnly)
        throw new GatewayError('permission_error', 'Only an account admin can change the settings.');
      const body = parseOr400(Settings, await readForm(c));
      const account = await updateAccount(
        deps,
        p.viewer.accountId,
        { timeZone: body.time_zone, membersManageOwnKeys: body.members_manage_own_keys === 'on' },
        p.viewer.keyId,
      );
      c.set('account', account);
      return settingsPage(pageCtx(c, deps), true);
    }),
  );

  app.post(
    '/keys',
    page(async (p, c) => {
      const scope = await rights(p);
      const { resumable_streams, ...body } = parseOr400(CreateKey, await readForm(c));
      const memberId = scope.ownMemberId ?? body.member_id;
      const { key, secret } = await createKey(deps, {
        ...body,
        resumableStreams: resumable_streams === 'on',
        accountId: scope.accountId,
        memberId,
        createdBy: scope.actor,
        planDefaults: true,
      });
      return keysPage(p, { name: key.name, secret });
    }),
  );
  app.post(
    '/keys/:id/rotate',
    page(async (p, c) => {
      const scope = await rights(p, idOf(c));
      if (!scope.canRotate)
        throw new GatewayError(
          'permission_error',
          'Only an account admin can rotate keys; revoke this one and create another.',
        );
      const body = parseOr400(Rotate, await readForm(c));
      const { key, secret } = await rotateKey(deps, scope, idOf(c), body.grace_period_seconds);
      return keyPage(p, key.id, { name: key.name, secret });
    }),
  );
  app.post('/keys/:id/streams', async (c) => {
    const p = pageCtx(c, deps);
    const scope = await rights(p, idOf(c));
    const body = parseOr400(Streams, await readForm(c));
    await updateKey(deps, scope, idOf(c), { resumableStreams: body.resumable_streams === 'on' });
    return c.redirect(p.href(`/dashboard/keys/${idOf(c)}`), 303);
  });
  app.post('/keys/:id/revoke', async (c) => {
    const p = pageCtx(c, deps);
    await deleteKey(deps, await rights(p, idOf(c)), idOf(c));
    return c.redirect(p.href('/dashboard/keys'), 303);
  });
  return app;
}
