/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { ConnectProvider, connectInput } from '../account-api/identity-routes';
import { connectProvider } from '../identity/connect';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import type { IdentityProviderRecord } from '../identity/identity-queries';
import type { Render } from './billing-routes';
import { PostForm } from './components/controls';
import { TableView } from './components/table-view';
import type { DashboardDeps, DashboardEnv } from './env';
import type { Table } from './table';
import { readForm } from './form';

const PATH = '/dashboard/settings/identity-provider';
const list = z
  .string()
  .max(5000)
  .transform((s) => s.split(/[\s,]+/).filter(Boolean));
/** The form's fields, as the account API's body (lists typed comma-separated). */
const Form = z.object({
  name: z.string(),
  issuer: z.string(),
  client_id: z.string(),
  client_secret: z
    .string()
    .optional()
    .transform((s) => s || undefined),
  allowed_domains: list,
  groups_claim: z.string().transform((s) => s.trim() || 'groups'),
  provision: z.string(),
  provision_groups: list,
  link_existing_members: z
    .string()
    .optional()
    .transform((s) => s === 'on'),
});

function page(
  idp: IdentityProviderRecord | null,
  canEdit: boolean,
  csrf: string,
  note?: { ok?: string; error?: string },
) {
  const table: Table = {
    id: 'identity-provider',
    caption: 'Company sign-in (OpenID Connect)',
    columns: [{ label: 'Setting' }, { label: 'Value' }],
    rows: idp
      ? [
          ['Provider', idp.name],
          ['Issuer', idp.issuer],
          ['Client id', idp.clientId],
          ['Client secret', 'stored encrypted'],
          ['Allowed email domains', idp.allowedDomains.join(', ') || 'any'],
          ['Groups claim', idp.groupsClaim],
          [
            'New members',
            idp.provision === 'group' ? `groups: ${idp.provisionGroups.join(', ')}` : 'by domain',
          ],
          ['Links existing members by email', idp.linkExistingMembers ? 'yes (verified emails only)' : 'no'],
          ['Sign-in link', `/dashboard/sign-in?account=${idp.accountId}`],
        ]
      : [['Provider', 'not connected']],
  };
  const body = (
    <>
      {note?.ok && (
        <p class="flash" role="status">
          {note.ok}
        </p>
      )}
      {note?.error && (
        <p class="error" role="alert">
          {note.error}
        </p>
      )}
      <TableView table={table} />
      {canEdit && (
        <PostForm action={PATH} csrf={csrf} class="stack">
          <label>
            Name on the sign-in button
            <input name="name" value={idp?.name ?? ''} maxlength={200} required />
          </label>
          <label>
            Issuer URL
            <input name="issuer" type="url" value={idp?.issuer ?? ''} required />
          </label>
          <label>
            Client id
            <input name="client_id" value={idp?.clientId ?? ''} required />
          </label>
          <label>
            Client secret{idp ? ' (leave empty to keep the stored one; required for a new issuer)' : ''}
            <input name="client_secret" type="password" autocomplete="off" required={!idp} />
          </label>
          <label>
            Allowed email domains (comma-separated; empty: any)
            <input name="allowed_domains" value={idp?.allowedDomains.join(', ') ?? ''} />
          </label>
          <label>
            Claim that carries groups
            <input name="groups_claim" value={idp?.groupsClaim ?? 'groups'} />
          </label>
          <label>
            New members on first sign-in
            <select name="provision">
              <option value="domain" selected={idp?.provision !== 'group'}>
                anyone from an allowed domain
              </option>
              <option value="group" selected={idp?.provision === 'group'}>
                only members of these groups
              </option>
            </select>
          </label>
          <label>
            Groups that get a seat (comma-separated, with "only members of these groups")
            <input name="provision_groups" value={idp?.provisionGroups.join(', ') ?? ''} />
          </label>
          <label>
            <input name="link_existing_members" type="checkbox" checked={idp?.linkExistingMembers ?? false} />
            Let a first sign-in take over an existing member with the same verified email
          </label>
          <button type="submit">Save and check the issuer</button>
        </PostForm>
      )}
      <p class="note">
        Register Keygate at the provider as a confidential client with the redirect URI
        &lt;gateway&gt;/dashboard/sign-in/idp/callback and the device authorization and refresh token grants.
      </p>
    </>
  );
  return {
    title: 'Company sign-in',
    section: '/dashboard/settings',
    tables: [table],
    body,
    periodless: true,
  };
}

/** The account's identity provider on the dashboard: everyone reads it, admins connect or change it. */
export function idpSettingsPages(app: Hono<DashboardEnv>, deps: DashboardDeps, render: Render): void {
  const view = async (c: Context<DashboardEnv>, note?: { ok?: string; error?: string }, status?: 400) => {
    const v = c.var.viewer;
    if (v.kind === 'operator') throw new GatewayError('not_found_error', 'Open an account first.');
    const idp = (await deps.identity?.store.identity.provider(v.accountId)) ?? null;
    const canEdit = v.kind === 'admin' && !v.readOnly && !!deps.identity;
    const result = page(idp, canEdit, v.csrf, note);
    return render(c, status ? { ...result, status } : result);
  };
  app.get('/settings/identity-provider', (c) => view(c));
  app.post('/settings/identity-provider', async (c) => {
    const v = c.var.viewer;
    if (v.kind !== 'admin' || v.readOnly || !deps.identity)
      throw new GatewayError('permission_error', 'Only an account admin can connect the identity provider.');
    try {
      const b = parseOr400(ConnectProvider, parseOr400(Form, await readForm(c)));
      await connectProvider(deps.identity.deps, deps.identity.oidc, v.accountId, connectInput(b), v.keyId);
    } catch (err) {
      if (err instanceof GatewayError && err.type === 'invalid_request_error')
        return view(c, { error: err.message }, 400);
      throw err;
    }
    return view(c, { ok: 'Identity provider saved: its issuer answered discovery.' });
  });
}
