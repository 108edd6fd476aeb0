import type { Keygate } from './client';

/** The client to run a multi-call helper on: a new group, unless the client already is one and no id is given. */
export function groupClient(client: Keygate, id: string | undefined): { group: Keygate; groupId: string } {
  const group = id !== undefined || client.groupId === null ? client.group(id) : client;
  return { group, groupId: group.groupId! };
}
