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

  /**
   * Public unicast, or inside an allowed CIDR. An IPv6 address that carries an IPv4 address inside
   * (mapped, compatible, NAT64, 6to4, Teredo, ISATAP) is judged as the IPv4 it carries.
   */
  allowsAddress(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    return this.#allows(ipaddr.process(address));
  }

  #allows(ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    for (const [net, bits] of this.#cidrs) if (ip.kind() === net.kind() && ip.match(net, bits)) return true;
    if (ip.kind() === 'ipv6') {
      const inner = embeddedIPv4(ip as ipaddr.IPv6);
      if (inner) return inner.length > 0 && inner.every((v4) => this.#allows(v4));
    }
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

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

/**
 * The IPv4 addresses an IPv6 address routes to, or undefined when it embeds none; an empty list
 * means "embeds one we cannot place" (refused). Forms (read 2026-11-29): IPv4-compatible ::/96
 * (RFC 4291 §2.5.5.1), IPv4-mapped ::ffff:0:0/96 (§2.5.5.2), IPv4-translated ::ffff:0:0:0/96
 * (RFC 2765 §2.1), NAT64 64:ff9b::/96 (RFC 6052 §2.1) and its local-use 64:ff9b:1::/48 (RFC 8215:
 * the prefix length, so where the IPv4 sits, is the operator's choice), 6to4 2002::/16 (RFC 3056
 * §2), Teredo 2001::/32 (RFC 4380 §4: server in bits 32-63, client inverted in the last 32) and
 * ISATAP interface ids ::0:5efe:a.b.c.d / ::200:5efe:a.b.c.d (RFC 5214 §6.1).
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = ip.parts as [number, number, number, number, number, number, number, number];
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zero(0, 6)) return [v4(p[6], p[7])];
  if (zero(0, 5) && p[5] === 0xffff) return [v4(p[6], p[7])];
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return [v4(p[6], p[7])];
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 1) return [];
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return [v4(p[6], p[7])];
  if (p[0] === 0x2002) return [v4(p[1], p[2])];
  if (p[0] === 0x2001 && p[1] === 0) return [v4(p[2], p[3]), v4(p[6] ^ 0xffff, p[7] ^ 0xffff)];
  if ((p[4] === 0 || p[4] === 0x200) && p[5] === 0x5efe) return [v4(p[6], p[7])];
  return undefined;
}
