/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { PostForm } from '../components/controls';
import { controlsSection } from '../components/controls-section';
import { TableView } from '../components/table-view';
import type { Table } from '../table';
import { queryOf } from '../view-state';
import type { PageCtx, PageResult } from './page';

const SUGGESTED_ZONES = [
  'UTC',
  'America/New_York',
  'America/Chicago',
  'America/Los_Angeles',
  'America/Sao_Paulo',
  'Europe/London',
  'Europe/Berlin',
  'Africa/Lagos',
  'Asia/Dubai',
  'Asia/Singapore',
  'Asia/Tokyo',
  'Australia/Sydney',
];

/** The account's settings: its reporting time zone, and whether members manage their own keys. Admins change them. */
export async function settingsPage(p: PageCtx, saved = false): Promise<PageResult> {
  const account = p.c.var.account!;
  const table: Table = {
    id: 'settings',
    caption: 'Account settings',
    columns: [{ label: 'Setting' }, { label: 'Value' }],
    rows: [
      ['Reporting time zone', account.timeZone],
      ['Members create and revoke their own keys', account.membersManageOwnKeys ? 'yes' : 'no'],
    ],
  };
  const canEdit = p.viewer.kind === 'admin' && !p.viewer.readOnly;
  const controls = await controlsSection(p, { kind: 'account' }, '/dashboard/settings');
  const body = (
    <>
      {saved && (
        <p class="flash" role="status">
          Settings saved.
        </p>
      )}
      <TableView table={table} csvHref={p.csv(table.id)} />
      {canEdit && (
        <PostForm action={`/dashboard/settings${queryOf(p.state)}`} csrf={p.viewer.csrf} class="stack">
          <label>
            Reporting time zone (IANA name, a whole number of hours from UTC)
            <input name="time_zone" value={account.timeZone} list="zones" maxlength={100} required />
          </label>
          <datalist id="zones">
            {SUGGESTED_ZONES.map((z) => (
              <option value={z} />
            ))}
          </datalist>
          <label class="check">
            <input type="checkbox" name="members_manage_own_keys" checked={account.membersManageOwnKeys} />{' '}
            Members may create and revoke their own keys
          </label>
          <button type="submit">Save settings</button>
        </PostForm>
      )}
      <p>
        <a href="/dashboard/settings/identity-provider">Company sign-in (OpenID Connect identity provider)</a>
      </p>
      {controls}
      <p class="note">
        Days start at midnight in the reporting time zone, here and in the account API's day buckets
        (usage_report and cost_report), so a day with a daylight-saving change lasts 23 or 25 hours. Usage is
        rolled up by whole UTC hours, so zones such as Asia/Kolkata (+5:30) are not offered.
      </p>
    </>
  );
  return { title: 'Settings', section: '/dashboard/settings', tables: [table], body };
}
