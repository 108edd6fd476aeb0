import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_BLOCKED, EgressPolicy, type Resolve } from './egress';

const refused = [
  'http://127.0.0.1/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0x7f.1/',
  'http://127.1/',
  'http://0177.0.0.1/',
  'http://0.0.0.0/',
  'http://[::1]/',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.1/',
  'http://172.16.5.4/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://[fe80::1]/',
  'http://224.0.0.1/',
  'http://[ff02::1]/',
  'http://255.255.255.255/',
  'http://[64:ff9b::7f00:1]/',
  'http://[2002:7f00:1::]/',
  'http://localhost/',
  'http://LOCALHOST./',
];

describe('egress policy', () => {
  const policy = new EgressPolicy();

  it.each(refused)('refuses %s, saying nothing about the target', async (url) => {
    const err = await policy.check(url).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(EGRESS_BLOCKED);
  });

  it('accepts public unicast addresses and names that resolve only to them', async () => {
    await expect(policy.check('https://93.184.215.14/hook')).resolves.toBeUndefined();
    await expect(policy.check('https://[2606:4700::1111]/')).resolves.toBeUndefined();
    const named = new EgressPolicy([], async () => [{ address: '93.184.215.14', family: 4 }]);
    await expect(named.check('https://hooks.example.com/x')).resolves.toBeUndefined();
  });

  it('refuses a name when any of its addresses is private', async () => {
    const mixed = new EgressPolicy([], async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ]);
    await expect(mixed.check('https://hooks.example.com/')).rejects.toThrow(EGRESS_BLOCKED);
  });

  it("lets the operator's allow-list through: CIDRs, addresses and host names", async () => {
    const allow = new EgressPolicy(['10.0.0.0/8', '::1', 'hooks.internal'], async () => [
      { address: '192.168.0.9', family: 4 },
    ]);
    await expect(allow.check('http://10.20.30.40/')).resolves.toBeUndefined();
    await expect(allow.check('http://[::1]:8080/')).resolves.toBeUndefined();
    await expect(allow.check('http://hooks.internal/')).resolves.toBeUndefined();
    await expect(allow.check('http://192.168.0.9/')).rejects.toThrow(EGRESS_BLOCKED);
    expect(() => EgressPolicy.parseList('10.0.0.0/99')).toThrow();
    expect(EgressPolicy.parseList(' 10.0.0.0/8 , hooks.internal ,')).toEqual([
      '10.0.0.0/8',
      'hooks.internal',
    ]);
  });
});

// Every IPv6 spelling that carries a loopback, private or link-local IPv4 address inside.
const embedded = [
  '::7f00:1', // IPv4-compatible ::127.0.0.1
  '::127.0.0.1',
  '::a00:1', // ::10.0.0.1
  '::a9fe:a9fe', // ::169.254.169.254
  '::ffff:7f00:1', // IPv4-mapped
  '::ffff:0:7f00:1', // IPv4-translated (RFC 2765)
  '64:ff9b::7f00:1', // NAT64 well-known prefix
  '64:ff9b::10.0.0.1',
  '64:ff9b:1::5db8:d70e', // local-use NAT64: where the IPv4 sits is the operator's choice
  '2002:7f00:1::', // 6to4
  '2002:c0a8:101::1', // 6to4 of 192.168.1.1
  '2001:0:5db8:d70e::80ff:fffe', // Teredo, client 127.0.0.1 (inverted)
  '2001:0:a00:1::a2b4:26f1', // Teredo, server 10.0.0.1
  '2606:4700::5efe:7f00:1', // ISATAP interface id
  '2606:4700::200:5efe:a00:1',
];

// The same forms carrying a public address: judged as that address.
const embeddedPublic = [
  '::5db8:d70e',
  '64:ff9b::5db8:d70e',
  '2002:5db8:d70e::1',
  '2001:0:5db8:d70e::a2b4:26f1', // Teredo, server 93.184.215.14, client 93.75.217.14
];

describe('egress policy: IPv6 forms of an IPv4 address', () => {
  const policy = new EgressPolicy();

  it.each(embedded)('refuses [%s], judged by the IPv4 address inside', async (address) => {
    expect(policy.allowsAddress(address)).toBe(false);
    await expect(policy.check(`http://[${address}]/`)).rejects.toThrow(EGRESS_BLOCKED);
  });

  it.each(embeddedPublic)('accepts [%s], whose IPv4 address inside is public', (address) => {
    expect(policy.allowsAddress(address)).toBe(true);
  });

  it("lets an embedded address through when the operator's allow-list holds its IPv4", () => {
    const allow = new EgressPolicy(['10.0.0.0/8']);
    expect(allow.allowsAddress('64:ff9b::10.0.0.1')).toBe(true);
    expect(allow.allowsAddress('::a00:1')).toBe(true);
    expect(allow.allowsAddress('64:ff9b::7f00:1')).toBe(false);
  });
});

describe('egress dispatcher', () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const send = (policy: EgressPolicy, url: string) =>
    fetch(url, { dispatcher: policy.dispatcher(), redirect: 'manual' }).then(
      (res) => res.status,
      (err: Error & { cause?: Error }) => err.cause?.message ?? err.message,
    );

  it('refuses a loopback literal at connect time; no byte reaches the target', async () => {
    const before = hits;
    expect(await send(new EgressPolicy(), `http://127.0.0.1:${port}/`)).toBe(EGRESS_BLOCKED);
    expect(await send(new EgressPolicy(), `http://[::ffff:127.0.0.1]:${port}/`)).toBe(EGRESS_BLOCKED);
    expect(await send(new EgressPolicy(), `http://[::7f00:1]:${port}/`)).toBe(EGRESS_BLOCKED);
    expect(hits).toBe(before);
  });

  it('checks the address a name resolves to when connecting, so a re-resolving name cannot slip through', async () => {
    let calls = 0;
    // Public at the check, loopback when the connection is made (DNS rebinding).
    const rebinding: Resolve = async () =>
      calls++ === 0 ? [{ address: '93.184.215.14', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    const policy = new EgressPolicy([], rebinding);
    const url = `http://rebind.test:${port}/`;
    await expect(policy.check(url)).resolves.toBeUndefined();
    const before = hits;
    expect(await send(policy, url)).toBe(EGRESS_BLOCKED);
    expect(hits).toBe(before);
  });

  it('connects to the address it checked (the name itself is never resolved again)', async () => {
    const policy = new EgressPolicy(['127.0.0.1/32'], async () => [{ address: '127.0.0.1', family: 4 }]);
    const before = hits;
    // `pinned.test` exists in no DNS: the answer can only come from the checked address.
    expect(await send(policy, `http://pinned.test:${port}/`)).toBe(200);
    expect(hits).toBe(before + 1);
  });
});
