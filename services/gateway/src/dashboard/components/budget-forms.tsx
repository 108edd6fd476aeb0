/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import type { BudgetRecord } from '../../budgets/budget-queries';
import type { KeyRecord } from '../../tenancy/key-queries';
import type { MemberRecord } from '../../tenancy/account-queries';
import type { WebhookEndpointRecord } from '../../budgets/alert-queries';
import { PeriodSelect, PostForm } from './controls';

/** Create a budget (on the account, a member or a key), or delete one. */
export const BudgetForms: FC<{
  csrf: string;
  budgets: BudgetRecord[];
  members: MemberRecord[];
  keys: KeyRecord[];
}> = ({ csrf, budgets, members, keys }) => (
  <div class="form-row">
    <details class="form-block">
      <summary>Create a budget</summary>
      <PostForm action="/dashboard/budgets" csrf={csrf} class="stack">
        <label>
          Name <input name="name" maxlength={100} placeholder="e.g. CI spend" />
        </label>
        <label>
          Applies to
          <select name="target">
            <option value="account">the whole account</option>
            {members.map((m) => (
              <option value={`user:${m.id}`}>member {m.email}</option>
            ))}
            {keys.map((k) => (
              <option value={`api_key:${k.id}`}>
                key {k.name} ({k.hint})
              </option>
            ))}
          </select>
        </label>
        <label>
          Limit (USD) <input name="limit_usd" type="number" min="0" step="0.01" required />
        </label>
        <PeriodSelect label="Resets" />
        <label>
          Alert at (percent of the limit, comma-separated){' '}
          <input name="thresholds" value="50, 80, 100" maxlength={60} />
        </label>
        <label class="check">
          <span>
            <input type="checkbox" name="hard_cap" value="on" checked /> Refuse calls once the limit is
            reached (429)
          </span>
        </label>
        <button type="submit">Create budget</button>
      </PostForm>
    </details>
    <RemoveOne
      csrf={csrf}
      action="/dashboard/budgets/delete"
      label="Budget"
      button="Delete budget"
      options={budgets.map((b) => [b.id, b.name])}
    />
  </div>
);

/** Add an alert webhook endpoint (its signing secret is shown once), or remove one. */
export const WebhookForms: FC<{
  csrf: string;
  endpoints: WebhookEndpointRecord[];
  events: readonly string[];
}> = ({ csrf, endpoints, events }) => (
  <div class="form-row">
    <details class="form-block">
      <summary>Add a webhook endpoint</summary>
      <PostForm action="/dashboard/budgets/webhooks" csrf={csrf} class="stack">
        <label>
          URL{' '}
          <input
            name="url"
            type="url"
            maxlength={2048}
            required
            placeholder="https://example.com/keygate-alerts"
          />
        </label>
        <fieldset>
          <legend>Events</legend>
          {events.map((e) => (
            <label class="check">
              <span>
                <input type="checkbox" name="events" value={e} checked /> {e}
              </span>
            </label>
          ))}
        </fieldset>
        <label>
          Description <input name="description" maxlength={500} />
        </label>
        <button type="submit">Add endpoint</button>
      </PostForm>
    </details>
    <RemoveOne
      csrf={csrf}
      action="/dashboard/budgets/webhooks/delete"
      label="Endpoint"
      button="Remove endpoint"
      options={endpoints.map((e) => [e.id, e.url])}
    />
  </div>
);

/** Picks one of `options` ([id, text]) and posts its id to `action`; nothing when there is none. */
const RemoveOne: FC<{
  csrf: string;
  action: string;
  label: string;
  button: string;
  options: [string, string][];
}> = ({ csrf, action, label, button, options }) =>
  options.length === 0 ? null : (
    <PostForm action={action} csrf={csrf} class="inline">
      <label>
        {label}
        <select name="id">
          {options.map(([value, text]) => (
            <option value={value}>{text}</option>
          ))}
        </select>
      </label>
      <button type="submit" class="danger">
        {button}
      </button>
    </PostForm>
  );

/** A new endpoint's signing secret, shown this once (the gateway keeps it encrypted, to sign deliveries). */
export const WebhookSecret: FC<{ url: string; secret: string }> = ({ url, secret }) => (
  <section class="secret" aria-labelledby="secret-title" role="status">
    <h2 id="secret-title">Signing secret for {url}</h2>
    <p>
      Copy it now into the receiver: it is shown only this once. Each delivery is signed with it (HMAC-SHA256
      over the timestamp and body).
    </p>
    <p>
      <code id="new-secret">{secret}</code>
    </p>
  </section>
);
