/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC, PropsWithChildren } from 'hono/jsx';
import type { Viewer } from '../env';
import { queryOf, type ViewState } from '../view-state';
import { PostForm } from './controls';

const ACCOUNT_NAV = [
  ['/dashboard', 'Overview'],
  ['/dashboard/members', 'Members'],
  ['/dashboard/keys', 'Keys'],
  ['/dashboard/groups', 'Groups'],
  ['/dashboard/claude-code', 'Claude Code'],
  ['/dashboard/calls', 'Call log'],
  ['/dashboard/models', 'Models'],
  ['/dashboard/budgets', 'Budgets'],
  ['/dashboard/spend-limits', 'Spend limits'],
  ['/dashboard/billing', 'Billing'],
  ['/dashboard/reconciliation', 'Reconcile'],
  ['/dashboard/settings', 'Settings'],
  ['/dashboard/guides', 'Guides'],
] as const;

export interface LayoutProps {
  title: string;
  viewer: Viewer | null;
  state?: ViewState;
  /** The nav entry this page belongs to. */
  section?: string;
  who?: string;
  /** The reporting time zone, shown on every page. */
  zone?: string;
}

export const Document: FC<PropsWithChildren<{ title: string }>> = ({ title, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{title} · Keygate</title>
      <link rel="stylesheet" href="/dashboard/assets/charts.css" />
      <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
      <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
    </head>
    <body>{children}</body>
  </html>
);

export const Layout: FC<PropsWithChildren<LayoutProps>> = ({
  title,
  viewer,
  state,
  section,
  who,
  zone,
  children,
}) => {
  const q = state ? queryOf(state) : '';
  const readOnly = viewer?.kind === 'admin' && viewer.readOnly;
  const nav: (readonly [string, string])[] =
    viewer?.kind === 'operator'
      ? [
          ['/dashboard', 'Accounts'],
          ['/dashboard/billing', 'Billing'],
          ['/dashboard/guides', 'Guides'],
        ]
      : viewer?.kind === 'member'
        ? ACCOUNT_NAV.filter(([p]) => p !== '/dashboard/members' && p !== '/dashboard/reconciliation')
        : [...ACCOUNT_NAV];
  return (
    <Document title={title}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <p class="brand">
          <a href={`/dashboard${q}`}>Keygate</a>
        </p>
        {viewer && (
          <nav aria-label="Dashboard">
            <ul>
              {readOnly && state && (
                <li>
                  <a href={`/dashboard${queryOf(state, { account: undefined })}`}>All accounts</a>
                </li>
              )}
              {nav.map(([path, label]) => (
                <li>
                  <a href={path + q} aria-current={section === path ? 'page' : undefined}>
                    {label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        {viewer && (
          <div class="who">
            {who && <span>{who}</span>}
            <PostForm action="/dashboard/sign-out" csrf={viewer.csrf}>
              <button type="submit">Sign out</button>
            </PostForm>
          </div>
        )}
      </header>
      <main id="main">
        <h1>{title}</h1>
        {children}
      </main>
      <footer>
        {zone && (
          <p>
            Reporting time zone: <strong data-zone={zone}>{zone}</strong>. Days start at its midnight, as the
            account API's day buckets do. Costs are estimates in USD from list prices, live keys only.
          </p>
        )}
      </footer>
    </Document>
  );
};
