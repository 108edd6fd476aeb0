import type { DashboardDeps, Viewer } from './env';

/** "Signed in as …", for the header. */
export async function whoLabel(deps: DashboardDeps, viewer: Viewer): Promise<string> {
  if (viewer.kind === 'operator') return 'Operator';
  const [account, member] = await Promise.all([
    deps.store.accounts.get(viewer.accountId),
    viewer.memberId ? deps.store.members.get(viewer.accountId, viewer.memberId) : Promise.resolve(null),
  ]);
  if (viewer.kind === 'admin' && viewer.readOnly)
    return `Operator (read-only) · ${account?.name ?? viewer.accountId}`;
  const role = viewer.kind === 'admin' ? 'admin' : 'member';
  return `${member?.email ?? 'account key'} (${role}) · ${account?.name ?? viewer.accountId}`;
}
