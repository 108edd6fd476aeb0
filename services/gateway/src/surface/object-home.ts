import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { ForwardCall, UpstreamAttempt, UpstreamTarget } from '../proxy/forward';
import { targetFor, type ProxyOptions } from '../proxy/routes';
import { familyOf } from '../upstreams/kinds';
import { providerKeyAttempt } from '../upstreams/request';
import type { Answer } from './exchange';
import type { ObjectOwner } from './object-queries';
import type { Objects } from './ownership';

/**
 * An object Keygate made (a file, a message batch) lives on the upstream that made it: the
 * account upstream, or the provider key (`upstreamId` null). Every later call for it goes there
 * alone, with that upstream's own credential, whatever the account's order is now; nothing else
 * is sent its id (another host with another key would not know it). `gone` names the upstream
 * the account no longer has (null: its provider key).
 */
export type Home = { target: UpstreamTarget } | { gone: string | null };

/** The upstream an answer came from, as the object it made records it: null for the provider key. */
export const madeOn = (answer: Answer): string | null =>
  answer.via && !answer.via.providerKey ? answer.via.label : null;

/** Homes apply to live keys of a gateway with account upstreams; a test key's objects are the emulator's. */
export const homesApply = (p: Principal, proxy: ProxyOptions): boolean =>
  p.key.kind !== 'test' && !!proxy.accountUpstreams;

/** Where an object made on `upstreamId` lives, for this caller; null where homes do not apply. */
export async function homeAt(
  p: Principal,
  proxy: ProxyOptions,
  upstreamId: string | null,
): Promise<Home | null> {
  if (!homesApply(p, proxy)) return null;
  if (upstreamId === null) return p.providerKey ? { target: targetFor(p, proxy) } : { gone: null };
  const via = await proxy.accountUpstreams!.one(p.key.accountId, upstreamId);
  return via ? { target: { baseUrl: '', apiKey: '', via } } : { gone: upstreamId };
}

/** A target as one upstream attempt (the provider key's when it has no account upstream). */
export function attemptOf(target: UpstreamTarget, dispatcher: Dispatcher): UpstreamAttempt {
  return target.via ?? providerKeyAttempt(target.baseUrl, target.apiKey, dispatcher, null);
}

const NOUN = { file: 'File', batch: 'Message batch' } as const;

/** An object whose upstream the account no longer has: a 502 naming it, not to be retried. */
export function goneError(kind: keyof typeof NOUN, id: string, gone: string | null): GatewayError {
  const made = kind === 'file' ? 'uploaded' : 'created';
  const where =
    gone === null
      ? "with the account's provider key, which the account no longer has"
      : `through the account's upstream ${gone}, which has since been removed`;
  const after =
    gone === null
      ? ''
      : kind === 'batch'
        ? ' It stays open, and is recorded if that upstream is restored.'
        : ' It is read there again if that upstream is restored.';
  return new GatewayError(
    'api_error',
    `${NOUN[kind]} ${id} was ${made} ${where}; Keygate reads it from no other upstream.${after}`,
    { status: 502, headers: { 'x-should-retry': 'false' } },
  );
}

/** Sends a call about one object to where it lives (objects Keygate did not make go where the call goes). */
export async function atHome(
  call: ForwardCall,
  proxy: ProxyOptions,
  objects: Objects,
  kind: keyof typeof NOUN,
  id: string,
): Promise<void> {
  if (!homesApply(call.principal, proxy)) return;
  const upstreamId = await objects.upstreamOf(call.principal.key.accountId, id);
  if (upstreamId === undefined) return;
  const home = await homeAt(call.principal, proxy, upstreamId);
  if (!home) return;
  if ('gone' in home) throw goneError(kind, id, home.gone);
  call.target = home.target;
}

/** Endpoints an account upstream serves (messages, count_tokens, files, batches); the rest go to the provider key. */
const onUpstreams = (endpoint: string): boolean =>
  endpoint === 'messages' || endpoint === 'count_tokens' || familyOf(endpoint) !== null;

const place = (upstreamId: string | null) =>
  upstreamId === null ? "the account's provider key" : `the account's upstream ${upstreamId}`;

/**
 * A body that names files Keygate made is sent where they live: all on one upstream, the call
 * goes there alone (a message naming a file uploaded through Claude Platform on AWS is answered
 * there, whichever upstream messages would take first); on two, a 400 naming them, since a call
 * reaches one host. Endpoints the provider key alone serves (sessions, agents, skills) may name
 * only its files. Files Keygate did not make (an admin's, made elsewhere) leave the call as it is.
 */
export async function placeByFiles(
  call: ForwardCall,
  proxy: ProxyOptions,
  files: readonly string[],
  owners: Map<string, ObjectOwner>,
): Promise<void> {
  if (!homesApply(call.principal, proxy)) return;
  const homes = new Map<string | null, string>();
  for (const id of files) {
    const owner = owners.get(id);
    const upstreamId = owner?.kind === 'file' ? (owner.upstreamId ?? null) : undefined;
    if (upstreamId !== undefined && !homes.has(upstreamId)) homes.set(upstreamId, id);
  }
  const [first, ...more] = homes;
  if (!first) return;
  if (more.length > 0)
    throw new GatewayError(
      'invalid_request_error',
      `This request names files on different upstreams of the account (${[first, ...more]
        .map(([upstreamId, id]) => `${id} on ${place(upstreamId)}`)
        .join(', ')}); a request goes to one upstream, so the files it names must all live on the same one.`,
    );
  const [upstreamId, id] = first;
  const home = await homeAt(call.principal, proxy, upstreamId);
  if (!home) return;
  if ('gone' in home) throw goneError('file', id, home.gone);
  if (upstreamId !== null && !onUpstreams(call.endpoint))
    throw new GatewayError(
      'invalid_request_error',
      `File ${id} lives on ${place(upstreamId)}; ${call.endpoint} goes to the account's provider key only, which does not have it.`,
    );
  call.target = home.target;
}
