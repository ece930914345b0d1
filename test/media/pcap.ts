// Test helper: reads UDP payloads out of a classic libpcap file (no dependency): global header, record headers,
// Ethernet (with 802.1Q tags) or Linux cooked capture, IPv4, UDP.
import { readFileSync } from 'node:fs';

const PCAP_MAGIC = 0xa1b2c3d4;
const PCAP_MAGIC_NS = 0xa1b23c4d;
const LINKTYPE_ETHERNET = 1;
const LINKTYPE_LINUX_SLL = 113;
const LINKTYPE_RAW = 101;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_VLAN = 0x8100;
const IPPROTO_UDP = 17;

export interface UdpDatagram {
  srcAddr: string;
  srcPort: number;
  dstAddr: string;
  dstPort: number;
  payload: Uint8Array;
}

export function readPcapUdp(path: string): UdpDatagram[] {
  const buf = readFileSync(path);
  const magicLE = buf.readUInt32LE(0);
  let le: boolean;
  if (magicLE === PCAP_MAGIC || magicLE === PCAP_MAGIC_NS) le = true;
  else if (buf.readUInt32BE(0) === PCAP_MAGIC || buf.readUInt32BE(0) === PCAP_MAGIC_NS) le = false;
  else throw new Error(`${path}: not a pcap file`);
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const linktype = u32(20);
  const out: UdpDatagram[] = [];
  let off = 24;
  while (off + 16 <= buf.length) {
    const inclLen = u32(off + 8);
    const rec = buf.subarray(off + 16, off + 16 + inclLen);
    off += 16 + inclLen;
    let p: number;
    let etherType: number;
    if (linktype === LINKTYPE_ETHERNET) {
      p = 14;
      etherType = rec.readUInt16BE(12);
      while (etherType === ETHERTYPE_VLAN) {
        etherType = rec.readUInt16BE(p + 2);
        p += 4;
      }
    } else if (linktype === LINKTYPE_LINUX_SLL) {
      p = 16;
      etherType = rec.readUInt16BE(14);
    } else if (linktype === LINKTYPE_RAW) {
      p = 0;
      etherType = ETHERTYPE_IPV4;
    } else {
      throw new Error(`${path}: unsupported link type ${linktype}`);
    }
    if (etherType !== ETHERTYPE_IPV4 || rec[p] >> 4 !== 4) continue;
    const ihl = (rec[p] & 0x0f) * 4;
    const totalLen = rec.readUInt16BE(p + 2);
    if (rec[p + 9] !== IPPROTO_UDP) continue;
    const ip = (o: number) => `${rec[o]}.${rec[o + 1]}.${rec[o + 2]}.${rec[o + 3]}`;
    const udp = p + ihl;
    const udpLen = rec.readUInt16BE(udp + 4);
    const end = Math.min(udp + udpLen, p + totalLen, rec.length);
    out.push({
      srcAddr: ip(p + 12),
      dstAddr: ip(p + 16),
      srcPort: rec.readUInt16BE(udp),
      dstPort: rec.readUInt16BE(udp + 2),
      payload: new Uint8Array(rec.subarray(udp + 8, end)),
    });
  }
  return out;
}
