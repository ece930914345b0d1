// The SDP policy of telephony calls against offers real peers send (SIPp's uac and uac_pcap, baresip with opus,
// G.722 and G.711), the 488 of sip/ when nothing matches, the worker's CallMedia, and the advertised address.
import type { NetworkInterfaceInfo } from 'node:os';
import t from 'tap';
import { createUserAgent, parseSdp, serializeSdp, SipError, type SessionDescription } from '../../sip/index.js';
import { createOffer } from '../../sip/sdp/index.js';
import { ConfigError, loadSettings } from '../../src/config.js';
import {
  advertisedAddress,
  answerInbound,
  callMediaOf,
  localMedia,
  preferAgentCodec,
  remoteMediaOf,
  type MediaPolicyInput,
} from '../../src/telephony/media-policy.js';
import { baresipInvite, sippInvite, startSippUas } from './sip-peers.js';

t.setTimeout(90_000);

const MULAW: MediaPolicyInput = { audioFormat: 'mulaw_8000', address: '192.0.2.80', port: 40000 };
const PCM16: MediaPolicyInput = { audioFormat: 'pcm_16000', address: '192.0.2.80', port: 40000 };

const offers: Record<string, SessionDescription> = {};
t.before(async () => {
  const target = (port: number) => `sip:+14155550100@127.0.0.1:${port}`;
  offers.sippUac = parseSdp((await sippInvite('+14155550100', 'uac')).body.toString());
  offers.sippPcap = parseSdp((await sippInvite('+14155550100', 'uac_pcap')).body.toString());
  offers.baresip = parseSdp((await baresipInvite('sip:+14155550123@127.0.0.1', target)).body.toString());
  offers.baresipAlawFirst = parseSdp(
    (await baresipInvite('sip:+14155550123@127.0.0.1', target, ';audio_codecs=PCMA,PCMU')).body.toString(),
  );
  offers.baresipWideband = parseSdp(
    (
      await baresipInvite('sip:+14155550123@127.0.0.1', target, ';audio_codecs=opus/48000/2,G722/16000/1')
    ).body.toString(),
  );
});

function answered(offer: SessionDescription, input: MediaPolicyInput) {
  const r = answerInbound(offer, input);
  if (!r.ok) throw new Error(`expected an answer, got 488: ${r.reason}`);
  return r;
}

t.test('SIPp uac (PCMU only): PCMU, no telephone-event, 20 ms, our address and port', async (t) => {
  for (const input of [MULAW, PCM16]) {
    const r = answered(offers.sippUac, input);
    t.same(callMediaOf(r.media), {
      codec: 'PCMU',
      payloadType: 0,
      clockRate: 8000,
      channels: 1,
      telephoneEventPayloadType: null,
      ptimeMs: 20,
      direction: 'sendrecv',
    });
    t.same(remoteMediaOf(r.media), { address: '127.0.0.1', port: offers.sippUac.media[0].port });
    const sdp = serializeSdp(r.answer);
    t.match(sdp, /c=IN IP4 192\.0\.2\.80\r\n/);
    t.match(sdp, /m=audio 40000 RTP\/AVP 0\r\n/);
    t.match(sdp, /a=ptime:20\r\n/);
  }
});

t.test('SIPp uac_pcap (PCMA and telephone-event 0-11,16): PCMA, events narrowed to ours', async (t) => {
  const r = answered(offers.sippPcap, MULAW);
  t.same(callMediaOf(r.media), {
    codec: 'PCMA',
    payloadType: 8,
    clockRate: 8000,
    channels: 1,
    telephoneEventPayloadType: 101,
    ptimeMs: 20,
    direction: 'sendrecv',
  });
  const sdp = serializeSdp(r.answer);
  t.match(sdp, /m=audio 40000 RTP\/AVP 8 101\r\n/);
  t.match(sdp, /a=fmtp:101 0-11,16\r\n/);
});

t.test('baresip (opus, G722, PCMU, PCMA, telephone-event): G.711 only, opus and G722 left out', async (t) => {
  const r = answered(offers.baresip, PCM16);
  t.same(callMediaOf(r.media), {
    codec: 'PCMU',
    payloadType: 0,
    clockRate: 8000,
    channels: 1,
    telephoneEventPayloadType: 101,
    ptimeMs: 20,
    direction: 'sendrecv',
  });
  t.match(serializeSdp(r.answer), /m=audio 40000 RTP\/AVP 0 8 101\r\n/);
  t.same(remoteMediaOf(r.media), { address: '127.0.0.1', port: offers.baresip.media[0].port });
});

t.test("the agent's codec first for mulaw_8000; otherwise the offerer's order", async (t) => {
  t.match(serializeSdp(offers.baresipAlawFirst), /m=audio \d+ RTP\/AVP 8 0 101/, 'baresip offered PCMA first');
  const mulaw = answered(offers.baresipAlawFirst, MULAW);
  t.equal(callMediaOf(mulaw.media).codec, 'PCMU', 'mulaw_8000: PCMU, no transcoding');
  t.match(serializeSdp(mulaw.answer), /m=audio 40000 RTP\/AVP 0 8 101\r\n/);
  const pcm = answered(offers.baresipAlawFirst, PCM16);
  t.equal(callMediaOf(pcm.media).codec, 'PCMA', "pcm_16000: the offerer's first");
  t.match(serializeSdp(pcm.answer), /m=audio 40000 RTP\/AVP 8 0 101\r\n/);
  t.equal(
    preferAgentCodec(offers.baresipAlawFirst, 'pcm_16000'),
    offers.baresipAlawFirst,
    'no preference: the offer untouched',
  );
  t.same(offers.baresipAlawFirst.media[0].formats.slice(0, 2), ['8', '0'], 'the offer itself is not reordered');
});

t.test('nothing in common: 488 (sip/ answers it)', async (t) => {
  t.match(serializeSdp(offers.baresipWideband), /m=audio \d+ RTP\/AVP 96 9 101/, 'baresip offered opus and G722 only');
  const r = answerInbound(offers.baresipWideband, MULAW);
  t.equal(r.ok, false);
  if (!r.ok) {
    t.equal(r.status, 488);
    t.match(r.reason, /no common codec \(offered opus, G722, telephone-event\)/);
  }
  // The user agent sends that 488 when handed the policy's LocalMedia.
  const parley = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  const peer = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  t.teardown(() => parley.close());
  t.teardown(() => peer.close());
  parley.on('invite', (req) => {
    parley.createUAS(req, { media: localMedia({ ...MULAW, address: '127.0.0.1' }) }).catch(() => undefined);
  });
  const err = await peer
    .createUAC(`sip:+14155550100@127.0.0.1:${parley.port}`, { localSdp: serializeSdp(offers.baresipWideband) })
    .catch((e: unknown) => e);
  t.ok(err instanceof SipError && err.status === 488, '488 Not Acceptable Here');
});

t.test(
  'hold: a sendonly offer makes Parley recvonly, and the worker is told the peer sends only; c=0.0.0.0 leaves nowhere to send',
  async (t) => {
    const held = structuredClone(offers.sippPcap);
    held.media[0].attributes.push({ name: 'sendonly', value: null });
    const heldAnswer = answered(held, MULAW).media;
    t.equal(heldAnswer.direction, 'recvonly', "Parley's own direction");
    t.equal(callMediaOf(heldAnswer).direction, 'sendonly', "CallMedia carries the peer's view");
    const legacy = structuredClone(offers.sippPcap);
    if (legacy.connection) legacy.connection.address = '0.0.0.0';
    const r = answered(legacy, MULAW);
    t.equal(remoteMediaOf(r.media), null);
    t.equal(callMediaOf(r.media).direction, 'sendonly');
  },
);

t.test('the offer Parley makes, answered by SIPp uas', async (t) => {
  const local = localMedia({ ...MULAW, address: '127.0.0.1', port: 40100 });
  const offer = serializeSdp(createOffer(local));
  t.match(offer, /m=audio 40100 RTP\/AVP 0 8 101\r\n/);
  t.match(offer, /a=rtpmap:101 telephone-event\/8000\r\n/);
  t.match(offer, /a=fmtp:101 0-16\r\n/);
  t.match(offer, /a=ptime:20\r\n/);
  t.match(offer, /a=sendrecv\r\n/);
  const callee = await startSippUas();
  t.teardown(() => callee.stop());
  const parley = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  t.teardown(() => parley.close());
  const dialog = await parley.createUAC(`sip:service@127.0.0.1:${callee.port}`, { media: local });
  t.ok(dialog.media, 'negotiated');
  if (dialog.media) {
    t.same(callMediaOf(dialog.media), {
      codec: 'PCMU',
      payloadType: 0,
      clockRate: 8000,
      channels: 1,
      telephoneEventPayloadType: null,
      ptimeMs: 20,
      direction: 'sendrecv',
    });
    t.equal(remoteMediaOf(dialog.media)?.address, '127.0.0.1');
  }
  await dialog.bye();
});

t.test('the advertised address: PARLEY_SIP_PUBLIC_ADDRESS, else PARLEY_HOST, else an external interface', async (t) => {
  const ifaces = (list: Array<Partial<NetworkInterfaceInfo>>): NodeJS.Dict<NetworkInterfaceInfo[]> => ({
    eth0: list as NetworkInterfaceInfo[],
  });
  const lo = { address: '127.0.0.1', family: 'IPv4' as const, internal: true, scopeid: undefined };
  const v4 = { address: '192.0.2.7', family: 'IPv4' as const, internal: false };
  const v6 = { address: '2001:db8::7', family: 'IPv6' as const, internal: false, scopeid: 0 };
  const linkLocal = { address: 'fe80::7', family: 'IPv6' as const, internal: false, scopeid: 2 };
  t.equal(advertisedAddress(loadSettings({})), '127.0.0.1', 'default PARLEY_HOST');
  t.equal(advertisedAddress(loadSettings({ PARLEY_HOST: '10.1.2.3' })), '10.1.2.3');
  t.equal(
    advertisedAddress(loadSettings({ PARLEY_HOST: '0.0.0.0', PARLEY_SIP_PUBLIC_ADDRESS: '203.0.113.8' })),
    '203.0.113.8',
  );
  t.equal(
    advertisedAddress(loadSettings({ PARLEY_HOST: '0.0.0.0' }), ifaces([lo, v6, v4])),
    '192.0.2.7',
    'binding everything: the external IPv4',
  );
  t.equal(
    advertisedAddress(loadSettings({ PARLEY_HOST: '::' }), ifaces([lo, linkLocal, v6])),
    '2001:db8::7',
    ':: with IPv6 only: the global IPv6',
  );
  const err = t.throws(() =>
    advertisedAddress(loadSettings({ PARLEY_HOST: '0.0.0.0' }), ifaces([lo, linkLocal])),
  ) as ConfigError;
  t.equal(err.problems[0].setting, 'PARLEY_SIP_PUBLIC_ADDRESS');
  const bad = t.throws(() => loadSettings({ PARLEY_SIP_PUBLIC_ADDRESS: 'sip.example.com' })) as ConfigError;
  t.equal(bad.problems[0].setting, 'PARLEY_SIP_PUBLIC_ADDRESS');
});
