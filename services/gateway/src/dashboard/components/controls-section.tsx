/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { Child, FC } from 'hono/jsx';
import { type ControlRow, type ControlSubject, controlsFor } from '../controls-data';
import type { AccountViewer, DashboardDeps } from '../env';
import { PeriodSelect, PostForm } from './controls';

const usd = (cents: number | null) => (cents === null ? '–' : `$${(cents / 100).toFixed(2)}`);
const at = (d: Date | null) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/:\d\d\.\d{3}Z$/, ' UTC')
    : '–';

/** Where the forms post: the subject as hidden fields, and the page to come back to. */
export interface ControlTarget {
  /** 'account', 'member:user_…', 'group:rbacgrp_…' or 'key:key_…'. */
  subject: string;
  back: string;
}

/** The subject as hidden fields, and the page to come back to. */
const Hidden: FC<{ target: ControlTarget }> = ({ target }) => (
  <>
    <input type="hidden" name="subject" value={target.subject} />
    <input type="hidden" name="back" value={target.back} />
  </>
);

/** One folded form of the section: its fields, posted to `/dashboard/controls/<action>` for the subject. */
const FormBlock: FC<{
  title: string;
  button: string;
  action: string;
  csrf: string;
  target: ControlTarget;
  children?: Child;
}> = ({ title, button, action, csrf, target, children }) => (
  <details class="form-block" data-form={action}>
    <summary>{title}</summary>
    <PostForm action={`/dashboard/controls/${action}`} csrf={csrf} class="stack">
      <Hidden target={target} />
      {children}
      <button type="submit">{button}</button>
    </PostForm>
  </details>
);

/**
 * "Limits and policies" on a member's, a group's, a key's or the account's page: every rule that
 * applies there (its own and inherited), with spend, what is left, the reset and who set it;
 * forms to set or remove the subject's own for an admin (`csrf` null: read-only).
 */
export const ControlsSection: FC<{ rows: ControlRow[]; target: ControlTarget; csrf: string | null }> = ({
  rows,
  target,
  csrf,
}) => {
  const isKey = target.subject.startsWith('key:');
  return (
    <section class="controls" id="limits">
      <h2>Limits and policies</h2>
      {rows.length === 0 ? (
        <p class="muted">No spend limit, budget, rate limit or model policy applies here.</p>
      ) : (
        <div class="scroll" role="region" aria-label="Limits and policies" tabindex={0}>
          <table class="data">
            <thead>
              <tr>
                <th>Rule</th>
                <th>Set on</th>
                <th>Limit</th>
                <th>Period</th>
                <th class="num">Spent</th>
                <th class="num">Left</th>
                <th>Resets</th>
                <th>Set by</th>
                {csrf && <th />}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr data-rule={r.rule}>
                  <td>{r.rule}</td>
                  <td class="wrap">{r.setOn}</td>
                  <td>{r.limit}</td>
                  <td>{r.period ?? '–'}</td>
                  <td class="num">{usd(r.spentCents)}</td>
                  <td class="num">{usd(r.leftCents)}</td>
                  <td>{at(r.resets)}</td>
                  <td class="wrap">{r.setBy ? (r.setAt ? `${r.setBy}, ${at(r.setAt)}` : r.setBy) : '–'}</td>
                  {csrf && (
                    <td>
                      {r.own && r.removeId && (
                        <PostForm action="/dashboard/controls/remove" csrf={csrf} class="inline">
                          <Hidden target={target} />
                          <input type="hidden" name="rule" value={r.removeId} />
                          <button type="submit" class="secondary">
                            Remove
                          </button>
                        </PostForm>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {csrf && (
        <div class="form-row">
          <FormBlock
            title="Set rate limits"
            button="Set rate limits"
            action="rate-limits"
            csrf={csrf}
            target={target}
          >
            <label>
              Requests a minute <input name="rpm" type="number" min="1" step="1" />
            </label>
            <label>
              Input tokens a minute (cache reads free) <input name="itpm" type="number" min="1" step="1" />
            </label>
            <label>
              Output tokens a minute <input name="otpm" type="number" min="1" step="1" />
            </label>
          </FormBlock>
          {!isKey && (
            <FormBlock
              title="Set a spend limit"
              button="Set spend limit"
              action="spend-limit"
              csrf={csrf}
              target={target}
            >
              <label>
                Limit (USD) <input name="amount_usd" type="number" min="0" step="0.01" required />
              </label>
              <PeriodSelect label="Resets" />
              <label class="check">
                <span>
                  <input type="checkbox" name="strict" value="on" /> Strict: each call holds its ceiling
                  (refuses early, never passes the limit)
                </span>
              </label>
            </FormBlock>
          )}
          <FormBlock
            title="Set the allowed models"
            button="Set model policy"
            action="policy"
            csrf={csrf}
            target={target}
          >
            <label>
              Models (comma-separated; family patterns end in *, empty allows any){' '}
              <input name="models" maxlength={2000} placeholder="claude-sonnet-*, claude-haiku-*" />
            </label>
            <label>
              Largest max_tokens (empty: any) <input name="max_tokens" type="number" min="1" step="1" />
            </label>
          </FormBlock>
        </div>
      )}
    </section>
  );
};

/** The section for a page: the rows that apply to `subject`, and the forms when an admin looks. */
export async function controlsSection(
  p: { deps: DashboardDeps; viewer: AccountViewer },
  subject: ControlSubject,
  back: string,
) {
  const rows = await controlsFor(p.deps, p.viewer.accountId, subject);
  const target =
    subject.kind === 'account'
      ? 'account'
      : subject.kind === 'key'
        ? `key:${subject.key.id}`
        : `${subject.kind}:${subject.id}`;
  const canEdit = p.viewer.kind === 'admin' && !p.viewer.readOnly;
  return (
    <ControlsSection rows={rows} target={{ subject: target, back }} csrf={canEdit ? p.viewer.csrf : null} />
  );
}
