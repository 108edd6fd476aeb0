/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import type { MemberRecord } from '../../tenancy/account-queries';
import { PostForm } from './controls';

/** The one time a secret is shown. */
export const SecretOnce: FC<{ name: string; secret: string }> = ({ name, secret }) => (
  <section class="secret" aria-labelledby="secret-title" role="status">
    <h2 id="secret-title">New secret for {name}</h2>
    <p>Copy it now: it is shown only this once and stored only as a hash.</p>
    <p>
      <code id="new-secret">{secret}</code>
    </p>
  </section>
);

/** `members` null: a member creating their own key, which is always theirs. */
export const CreateKeyForm: FC<{ csrf: string; action: string; members: MemberRecord[] | null }> = ({
  csrf,
  action,
  members,
}) => (
  <details class="form-block">
    <summary>Create a key</summary>
    <PostForm action={action} csrf={csrf} class="stack">
      <label>
        Name <input name="name" maxlength={100} />
      </label>
      <label>
        Kind
        <select name="kind">
          <option value="live">live (calls the provider)</option>
          <option value="test">test (built-in emulator)</option>
        </select>
      </label>
      {members && (
        <label>
          Member
          <select name="member_id">
            <option value="">none (an app or environment key)</option>
            {members.map((m) => (
              <option value={m.id}>{m.email}</option>
            ))}
          </select>
        </label>
      )}
      <label>
        App <input name="app" maxlength={100} />
      </label>
      <label>
        Environment <input name="environment" maxlength={100} />
      </label>
      <label class="check">
        <input type="checkbox" name="resumable_streams" /> Resumable streams: a stream whose connection drops
        can be picked up again (the gateway reads it to its end, so it is billed whole)
      </label>
      <button type="submit">Create key</button>
    </PostForm>
  </details>
);

export const KeyActions: FC<{
  csrf: string;
  base: string;
  query: string;
  rotate: boolean;
  /** The key's streams are resumable now; null for a key that makes no calls (admin). */
  resumable: boolean | null;
}> = ({ csrf, base, query, rotate, resumable }) => (
  <div class="actions">
    {resumable !== null && (
      <PostForm action={`${base}/streams${query}`} csrf={csrf} class="inline">
        <input type="hidden" name="resumable_streams" value={resumable ? 'off' : 'on'} />
        <button type="submit">{resumable ? 'Stop keeping streams' : 'Make streams resumable'}</button>
      </PostForm>
    )}
    {rotate && (
      <PostForm action={`${base}/rotate${query}`} csrf={csrf} class="inline">
        <label>
          Old secret keeps working for
          <select name="grace_period_seconds">
            <option value="0">no grace</option>
            <option value="3600">1 hour</option>
            <option value="86400">1 day</option>
            <option value="604800">7 days</option>
          </select>
        </label>
        <button type="submit">Rotate</button>
      </PostForm>
    )}
    <PostForm action={`${base}/revoke${query}`} csrf={csrf} class="inline">
      <button type="submit" class="danger">
        Revoke
      </button>
    </PostForm>
  </div>
);
