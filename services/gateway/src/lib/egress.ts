import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/** What every refusal says: nothing about the target, so a refusal cannot map a network. */
export const EGRESS_BLOCKED = 'blocked by the egress policy';

export class EgressBlockedError extends Error {
  override name = 'EgressBlockedError';
  readonly code = 'EGRESS_BLOCKED';
  constructor() {
    super(EGRESS_BLOCKED);
  }
}

export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * Where outbound requests that an account or the operator aims (alert webhooks) may go: public
 * unicast addresses only, checked after DNS resolution, plus what the operator allows
 * (KEYGATE_EGRESS_ALLOW: CIDRs, addresses or host names, for receivers inside their network).
 */
export class EgressPolicy {
  readonly #cidrs: Cidr[] = [];
  readonly #hosts = new Set<string>();
  readonly #resolve: Resolve;

  constructor(allow: readonly string[] = [], resolve: Resolve = systemResolve) {
    for (const entry of allow) {
      const e = entry.trim().toLowerCase();
      if (!e) continue;
      if (e.includes('/')) this.#cidrs.push(ipaddr.parseCIDR(e));
      else if (ipaddr.isValid(e)) {
        const ip = ipaddr.process(e);
        this.#cidrs.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      } else this.#hosts.add(e);
    }
    this.#resolve = resolve;
  }

  /** Parses KEYGATE_EGRESS_ALLOW's comma-separated list; throws on a malformed CIDR. */
  static parseList(list: string | undefined): string[] {
    const entries = (list ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    for (const e of entries) if (e.includes('/')) ipaddr.parseCIDR(e);
    return entries;
  }

  allowsHost(host: string): boolean {
    return this.#hosts.has(bare(host).toLowerCase());
  }

  /** Public unicast, or inside an allowed CIDR. IPv4-mapped IPv6 is judged as the IPv4 it maps. */
  allowsAddress(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    for (const [net, bits] of this.#cidrs) if (ip.kind() === net.kind() && ip.match(net, bits)) return true;
    // NAT64, 6to4 and Teredo forms carry an IPv4 address inside: refused with the other non-unicast ranges.
    return ip.range() === 'unicast';
  }

  /** The URL's host resolves only to allowed addresses (all of them), or is an allowed host. */
  async check(url: string): Promise<void> {
    let host: string;
    try {
      host = bare(new URL(url).hostname);
    } catch {
      throw new EgressBlockedError();
    }
    if (this.allowsHost(host)) return;
    const addresses = isIP(host) ? [host] : (await this.#addresses(host)).map((a) => a.address);
    if (addresses.length === 0 || !addresses.every((a) => this.allowsAddress(a)))
      throw new EgressBlockedError();
  }

  async #addresses(host: string) {
    try {
      return await this.#resolve(host);
    } catch {
      // A name that does not resolve cannot be reached either; say only what every refusal says.
      throw new EgressBlockedError();
    }
  }

  /**
   * A `net.connect` lookup that resolves once, refuses the name if any address is not allowed,
   * and hands the socket exactly the addresses it checked: a name that re-resolves elsewhere
   * between the check and the connection cannot slip through.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const allowedHost = this.allowsHost(hostname);
    this.#addresses(hostname).then(
      (found) => {
        const wanted = found.filter((a) => !options.family || a.family === options.family);
        if (wanted.length === 0 || (!allowedHost && !found.every((a) => this.allowsAddress(a.address))))
          return callback(new EgressBlockedError(), '', 0);
        if (options.all) return (callback as (e: null, a: typeof wanted) => void)(null, wanted);
        callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => callback(error, '', 0),
    );
  };

  /** An undici dispatcher whose every connection passes this policy (IP literals skip DNS, so they are checked here). */
  dispatcher(opts: { connectTimeoutMs?: number } = {}): Dispatcher {
    const connect = buildConnector({ lookup: this.lookup, timeout: opts.connectTimeoutMs ?? 10_000 });
    return new Agent({
      connect: (options, callback) => {
        const host = bare(options.hostname);
        if (isIP(host) && !this.allowsHost(host) && !this.allowsAddress(host))
          return callback(new EgressBlockedError(), null);
        return connect(options, callback);
      },
    });
  }
}

function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
