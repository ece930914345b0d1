// Which hosts Parley may call on a customer's behalf (webhook tools, configuration endpoints, post-call
// webhooks): public unicast addresses only. One classifier for both places that judge: the URL rules when a URL is
// saved (src/schemas/common.ts, text only, no DNS) and the guarded HTTP client when it is called (./guarded-fetch.ts,
// every resolved address of every hop).
//
// Sources: RFC 6890 and the IANA IPv4 and IPv6 special-purpose address registries; each range cites its RFC.
import { isIP } from 'node:net';

/** Why an address is not public, as a short phrase ("loopback", "private", ...). */
export type AddressClass = string;

// ---- IPv4 ---------------------------------------------------------------------------------------------------

/** [first address, prefix length, class] of the IPv4 ranges that are not public unicast destinations. */
const SPECIAL_V4: readonly [string, number, AddressClass][] = [
  ['0.0.0.0', 8, 'unspecified'], // RFC 1122 3.2.1.3 "this network"
  ['10.0.0.0', 8, 'private'], // RFC 1918
  ['100.64.0.0', 10, 'carrier-grade NAT'], // RFC 6598
  ['127.0.0.0', 8, 'loopback'], // RFC 1122 3.2.1.3
  ['169.254.0.0', 16, 'link-local'], // RFC 3927
  ['172.16.0.0', 12, 'private'], // RFC 1918
  ['192.0.0.0', 24, 'IETF protocol assignment'], // RFC 6890 2.1
  ['192.0.2.0', 24, 'documentation'], // RFC 5737 TEST-NET-1
  ['192.88.99.0', 24, '6to4 relay anycast'], // RFC 7526 (deprecated)
  ['192.168.0.0', 16, 'private'], // RFC 1918
  ['198.18.0.0', 15, 'benchmarking'], // RFC 2544
  ['198.51.100.0', 24, 'documentation'], // RFC 5737 TEST-NET-2
  ['203.0.113.0', 24, 'documentation'], // RFC 5737 TEST-NET-3
  ['224.0.0.0', 4, 'multicast'], // RFC 5771
  ['255.255.255.255', 32, 'broadcast'], // RFC 919 7 (before 240/4, which contains it)
  ['240.0.0.0', 4, 'reserved'], // RFC 1112 4
];

function v4ToInt(addr: string): number {
  return addr.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const SPECIAL_V4_INT = SPECIAL_V4.map(([base, bits, cls]) => ({ base: v4ToInt(base), size: 2 ** (32 - bits), cls }));

function v4Class(n: number): AddressClass | null {
  for (const r of SPECIAL_V4_INT) if (n >= r.base && n < r.base + r.size) return r.cls;
  return null;
}

// ---- IPv6 ---------------------------------------------------------------------------------------------------

/** The eight 16-bit groups of a valid IPv6 address (a zone `%eth0` is dropped, a dotted IPv4 tail converted). */
function v6Groups(addr: string): number[] {
  let a = addr.toLowerCase();
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const n = v4ToInt(dotted[1]);
    a = `${a.slice(0, dotted.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = a.split('::') as [string, string | undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const hi = parse(head);
  if (tail === undefined) return hi;
  const lo = parse(tail);
  return [...hi, ...new Array<number>(8 - hi.length - lo.length).fill(0), ...lo];
}

/** The IPv4 address held in two groups, as an integer. */
const embedded = (hi: number, lo: number) => hi * 0x10000 + lo;

function v6Class(g: number[]): AddressClass | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return 'unspecified'; // RFC 4291 2.5.2
  if (zeroUpTo(7) && g[7] === 1) return 'loopback'; // RFC 4291 2.5.3
  // RFC 4291 2.5.5.2 IPv4-mapped ::ffff:0:0/96: the IPv4 address it stands for decides.
  if (zeroUpTo(5) && g[5] === 0xffff) return embeddedClass('IPv4-mapped', embedded(g[6], g[7]));
  if (zeroUpTo(6)) return 'IPv4-compatible'; // RFC 4291 2.5.5.1 ::/96 (deprecated)
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) return 'IPv4-translated'; // RFC 2765 ::ffff:0:0:0/96
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    // RFC 6052 64:ff9b::/96 well-known NAT64 prefix: the IPv4 address decides. RFC 8215 64:ff9b:1::/48 local use.
    if (g.slice(2, 6).every((x) => x === 0)) return embeddedClass('NAT64', embedded(g[6], g[7]));
    if (g[2] === 1) return 'local-use NAT64';
  }
  if (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return 'discard-only'; // RFC 6666 100::/64
  if (g[0] === 0x2001 && g[1] === 0) return 'Teredo'; // RFC 4380 2001::/32
  if (g[0] === 0x2001 && g[1] < 0x200) return 'IETF protocol assignment'; // RFC 2928 2001::/23 (benchmarking, ORCHID)
  if (g[0] === 0x2001 && g[1] === 0xdb8) return 'documentation'; // RFC 3849
  if (g[0] === 0x3fff && g[1] < 0x1000) return 'documentation'; // RFC 9637 3fff::/20
  if (g[0] === 0x2002) return embeddedClass('6to4', embedded(g[1], g[2])); // RFC 3056 2002::/16
  if ((g[0] & 0xfe00) === 0xfc00) return 'unique-local'; // RFC 4193 fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'; // RFC 4291 2.5.6
  if ((g[0] & 0xffc0) === 0xfec0) return 'site-local'; // RFC 3879 (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return 'multicast'; // RFC 4291 2.7
  if ((g[0] & 0xe000) !== 0x2000) return 'reserved'; // RFC 4291 2.4: global unicast is 2000::/3
  return null;
}

function embeddedClass(form: string, v4: number): AddressClass | null {
  const cls = v4Class(v4);
  return cls === null ? null : `${form} ${cls}`;
}

// ---- addresses and host names --------------------------------------------------------------------------------

/**
 * Why an IP address (v4 or v6, as node:net writes it) is not a public unicast destination ("loopback",
 * "private", "IPv4-mapped loopback", ...), or null when it is public. Anything that is not an address is "invalid".
 */
export function addressClass(address: string): AddressClass | null {
  const bare = address.replace(/^\[|\]$/g, '');
  const kind = isIP(bare.split('%')[0]);
  if (kind === 4) return v4Class(v4ToInt(bare));
  if (kind === 6) return v6Class(v6Groups(bare));
  return 'invalid';
}

export function isPublicAddress(address: string): boolean {
  return addressClass(address) === null;
}

/** Names that resolve only inside a machine or a private network (RFC 6761 6.3 `localhost`, RFC 6762 `local`, RFC 8375 `home.arpa`, common private suffixes). */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|intranet|lan|home|corp|private|localdomain|home\.arpa)$/i;

export type HostProblem =
  | { kind: 'address'; address: string; class: AddressClass }
  | { kind: 'name'; reason: 'empty label' | 'single label' | 'local name' };

/**
 * What is wrong with a URL's host (WHATWG `url.hostname`: numeric IPv4 forms such as `2130706433` or `0x7f.1`
 * already written as dotted quads, IPv6 in brackets) as a public destination, judged by its text alone: an IP
 * literal by its class, a name by its form. A name that resolves to a private address passes here; the guarded
 * client refuses it when called.
 */
export function hostProblem(hostname: string): HostProblem | null {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare)) {
    const cls = addressClass(bare);
    return cls === null ? null : { kind: 'address', address: bare, class: cls };
  }
  // One trailing dot is the DNS root (RFC 1034 3.1); any other empty label (`localhost..`, `a..b`) is no name.
  const name = bare.endsWith('.') ? bare.slice(0, -1) : bare;
  const labels = name.split('.');
  if (labels.some((l) => l === '')) return { kind: 'name', reason: 'empty label' };
  if (labels.length < 2) return { kind: 'name', reason: 'single label' };
  if (LOCAL_NAME.test(name)) return { kind: 'name', reason: 'local name' };
  return null;
}
