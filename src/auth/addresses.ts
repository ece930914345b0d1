// Client addresses and address lists: the workspace ip_allowlist and PARLEY_TRUSTED_PROXIES, both as
// net.BlockList. Shared by the control plane and the realtime port.
import { BlockList, isIP } from 'node:net';

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i; // RFC 4291 2.5.5.2

/** `::ffff:1.2.3.4` -> `1.2.3.4`; other addresses unchanged. */
export function normalizeAddress(addr: string): string {
  const m = IPV4_MAPPED.exec(addr);
  return m ? m[1] : addr;
}

/** Why `entry` is not an IP address or CIDR range, or null when it is one. */
export function addressEntryProblem(entry: string): string | null {
  const slash = entry.indexOf('/');
  const addr = slash < 0 ? entry : entry.slice(0, slash);
  const family = isIP(addr);
  if (family === 0) return 'must be an IP address or CIDR range';
  if (slash < 0) return null;
  const bits = entry.slice(slash + 1);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return `prefix length must be 0-${max}`;
  return null;
}

/** A BlockList holding every entry (each valid per addressEntryProblem). */
export function addressList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [addr, bits] = entry.split('/');
    const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(bits), type);
  }
  return list;
}

/** Whether `addr` is in `list` (IPv4-mapped IPv6 addresses match IPv4 entries). */
export function listHas(list: BlockList, addr: string): boolean {
  const a = normalizeAddress(addr);
  const family = isIP(a);
  if (family === 0) return false;
  return list.check(a, family === 6 ? 'ipv6' : 'ipv4');
}

/** Parses PARLEY_TRUSTED_PROXIES (comma-separated addresses/CIDRs); throws naming a bad entry. */
export function parseTrustedProxies(setting: string): BlockList {
  const entries = setting
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const e of entries) {
    const problem = addressEntryProblem(e);
    if (problem) throw new Error(`PARLEY_TRUSTED_PROXIES: '${e}' ${problem}`);
  }
  return addressList(entries);
}

/**
 * The client's address: the peer's, unless the peer is a trusted proxy; then the right-most X-Forwarded-For
 * entry that is not itself a trusted proxy (entries left of it could be forged by the client).
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, trusted: BlockList): string {
  const direct = normalizeAddress(peer);
  if (!forwardedFor || !listHas(trusted, direct)) return direct;
  const hops = forwardedFor
    .split(',')
    .map((s) => normalizeAddress(s.trim()))
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (isIP(hops[i]) === 0) return direct; // a malformed header: believe only the socket
    if (!listHas(trusted, hops[i])) return hops[i];
  }
  return hops[0] ?? direct;
}
