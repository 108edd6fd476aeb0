/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Prose } from '../components/prose';
import type { FC } from 'hono/jsx';
import { Document } from '../components/layout';

/** The sign-in form: an admin key, one of a member's own keys, or the operator token. */
export const SignInPage: FC<{
  csrf: string;
  error?: string;
  /** The account's identity provider, when the page was opened for one (`?account=`). */
  idp?: { accountId: string; name: string } | null;
  /** Whether company sign-in is offered at all. */
  sso?: boolean;
}> = ({ csrf, error, idp, sso }) => (
  <Document title="Sign in">
    <main id="main" class="sign-in">
      <h1>Sign in to Keygate</h1>
      <p>
        Use an admin key (kg_admin_…) to see the whole account, one of your own member keys to see your usage,
        or the operator token.
      </p>
      {error && (
        <p class="error" role="alert">
          <Prose text={error} />
        </p>
      )}
      <form method="post" action="/dashboard/sign-in" class="stack">
        <input type="hidden" name="_csrf" value={csrf} />
        <label for="token">Key or operator token</label>
        <input id="token" name="token" type="password" autocomplete="off" required />
        <button type="submit">Sign in</button>
      </form>
      {idp && (
        <p>
          <a class="button" href={`/dashboard/sign-in/idp?account=${encodeURIComponent(idp.accountId)}`}>
            Sign in with {idp.name}
          </a>
        </p>
      )}
      {sso && !idp && (
        // To this page again, which then shows the provider's button: a form whose answer redirects to
        // the provider would break the page's `form-action 'self'` policy.
        <form method="get" action="/dashboard/sign-in" class="stack">
          <label for="account">Or sign in with your company account: your Keygate account id</label>
          <input id="account" name="account" autocomplete="organization" required />
          <button type="submit">Continue with company sign-in</button>
        </form>
      )}
    </main>
  </Document>
);

export const ErrorPage: FC<{ status: number; message: string }> = ({ status, message }) => (
  <Document title={status === 404 ? 'Not found' : 'Error'}>
    <main id="main" class="sign-in">
      <h1>{status === 404 ? 'Not found' : `Error ${status}`}</h1>
      <p role="alert">
        <Prose text={message} />
      </p>
      <p>
        <a href="/dashboard">Back to the dashboard</a>
      </p>
    </main>
  </Document>
);
