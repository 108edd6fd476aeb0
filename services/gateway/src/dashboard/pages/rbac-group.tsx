/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { controlsSection } from '../components/controls-section';
import { notFound, type PageCtx, type PageResult } from './page';

/**
 * An RBAC group's page (admins): its members, then every spend limit, rate limit and model
 * policy that applies to it (its own and the account's), with the forms to set or remove its own.
 */
export async function rbacGroupPage(p: PageCtx, groupId: string): Promise<PageResult> {
  const { deps, viewer } = p;
  if (viewer.kind !== 'admin') throw notFound('group', groupId);
  const group = await deps.store.rbacGroups.get(viewer.accountId, groupId);
  if (!group) throw notFound('group', groupId);
  const [members, controls] = await Promise.all([
    deps.store.rbacGroups.members(viewer.accountId, groupId, { limit: 1000 }),
    controlsSection(p, { kind: 'group', id: groupId }, `/dashboard/rbac-groups/${groupId}`),
  ]);
  return {
    title: `Group: ${group.name}`,
    section: '/dashboard/groups',
    tables: [],
    body: (
      <>
        <h2>Members</h2>
        {members.rows.length === 0 ? (
          <p class="muted">No members yet.</p>
        ) : (
          <ul class="group-members">
            {members.rows.map((m) => (
              <li>
                <a href={p.href(`/dashboard/members/${m.memberId}`)}>{m.email}</a>
                {m.via === 'idp' ? ' (through the identity provider)' : ''}
              </li>
            ))}
          </ul>
        )}
        {controls}
      </>
    ),
  };
}
