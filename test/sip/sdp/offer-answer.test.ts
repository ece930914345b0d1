import t from 'tap';
import { parseSdp, serializeSdp, SdpParseError } from '../../../sip/sdp/parse.js';
import { acceptAnswer, answerOffer, createOffer, type LocalMedia } from '../../../sip/sdp/offer-answer.js';
import { codecsOf, directionOf, isHold } from '../../../sip/sdp/media.js';

const local: LocalMedia = {
  address: '127.0.0.1',
  port: 30400,
  codecs: ['PCMU', 'PCMA'],
  telephoneEvent: true,
  sessionId: '42',
  sessionVersion: 1,
};

function offer(lines: string[]): string {
  return ['v=0', 'o=peer 1 1 IN IP4 10.0.0.1', 's=-', 'c=IN IP4 10.0.0.1', 't=0 0', ...lines].join('\r\n') + '\r\n';
}

t.test('parse and serialize round trip keeps every line', async (t) => {
  const text =
    [
      'v=0',
      'o=- 20518 0 IN IP4 203.0.113.1',
      's=-',
      'i=call',
      'c=IN IP4 203.0.113.1',
      'b=AS:64',
      't=0 0',
      'a=tool:x',
      'm=audio 54400 RTP/AVP 0 8 101',
      'b=TIAS:64000',
      'a=rtpmap:0 PCMU/8000',
      'a=rtpmap:101 telephone-event/8000',
      'a=fmtp:101 0-16',
      'a=ptime:20',
      'a=sendrecv',
      'm=video 0 RTP/AVP 31',
    ].join('\r\n') + '\r\n';
  const parsed = parseSdp(text);
  t.equal(parsed.media.length, 2);
  t.equal(parsed.media[0].port, 54400);
  t.same(parsed.media[0].formats, ['0', '8', '101']);
  t.equal(serializeSdp(parsed), text);
  t.equal(serializeSdp(parseSdp(text.replace(/\r\n/g, '\n'))), text, 'LF-only input is read too');
});

t.test('parse rejects what offer/answer cannot use', async (t) => {
  t.throws(() => parseSdp('o=- 1 1 IN IP4 1.2.3.4\r\n'), SdpParseError, 'no v=');
  t.throws(
    () => parseSdp('v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nt=0 0\r\nm=audio 5000 RTP/AVP 0\r\n'),
    SdpParseError,
    'no c=',
  );
  t.throws(() => parseSdp('v=0\r\no=- 1 1 IN IPX 1.2.3.4\r\n'), SdpParseError, 'bad address type');
  t.throws(() => parseSdp('v=0\r\nnot sdp\r\n'), SdpParseError, 'garbage line');
  t.throws(
    () => parseSdp('v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nm=audio 70000 RTP/AVP 0\r\n'),
    SdpParseError,
    'port out of range',
  );
});

t.test('static payload types without rtpmap are known codecs', async (t) => {
  const s = parseSdp(offer(['m=audio 4000 RTP/AVP 8 0']));
  t.same(
    codecsOf(s.media[0]).map((c) => [c.payloadType, c.name]),
    [
      [8, 'PCMA'],
      [0, 'PCMU'],
    ],
  );
});

t.test('answer keeps common codecs in the offerer order and its telephone-event payload type', async (t) => {
  const r = answerOffer(
    parseSdp(
      offer([
        'm=audio 4000 RTP/AVP 18 8 0 96',
        'a=rtpmap:18 G729/8000',
        'a=rtpmap:96 telephone-event/8000',
        'a=fmtp:96 0-15',
        'a=ptime:20',
      ]),
    ),
    local,
  );
  if (!r.ok) throw new Error(r.reason);
  t.equal(r.media.codec.name, 'PCMA', 'first common codec in the offerer order, not ours');
  t.same(
    r.media.codecs.map((c) => c.name),
    ['PCMA', 'PCMU'],
  );
  t.equal(r.media.telephoneEvent?.payloadType, 96);
  t.equal(r.media.telephoneEvent?.fmtp, '0-15', 'events narrowed to the offer');
  t.equal(r.media.remoteAddress, '10.0.0.1');
  t.equal(r.media.remotePort, 4000);
  const m = r.answer.media[0];
  t.same(m.formats, ['8', '0', '96']);
  t.equal(m.port, 30400);
  const text = serializeSdp(r.answer);
  t.match(text, /a=fmtp:96 0-15\r\n/);
  t.match(text, /c=IN IP4 127\.0\.0\.1\r\n/);
  t.match(text, /a=sendrecv\r\n/);
});

t.test('telephone-event 0-16 is accepted whole; without fmtp it means 0-15', async (t) => {
  const a = answerOffer(
    parseSdp(offer(['m=audio 4000 RTP/AVP 0 101', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-16'])),
    local,
  );
  t.equal(a.ok && a.media.telephoneEvent?.fmtp, '0-16');
  const b = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0 101', 'a=rtpmap:101 telephone-event/8000'])), local);
  t.equal(b.ok && b.media.telephoneEvent?.fmtp, '0-15');
  const c = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0 101', 'a=rtpmap:101 telephone-event/16000'])), local);
  t.equal(c.ok && c.media.telephoneEvent, null, 'telephone-event at another clock rate is not used');
  const d = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0 101', 'a=rtpmap:101 telephone-event/8000'])), {
    ...local,
    telephoneEvent: false,
  });
  t.ok(
    d.ok && d.media.telephoneEvent === null && !serializeSdp(d.answer).includes('telephone-event'),
    'disabled locally',
  );
});

t.test('no common codec, SRTP only or no audio is a 488 result', async (t) => {
  const g729 = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 18', 'a=rtpmap:18 G729/8000'])), local);
  t.same(g729.ok ? null : [g729.status, /no common codec/.test(g729.reason)], [488, true]);
  const srtp = answerOffer(parseSdp(offer(['m=audio 4000 RTP/SAVP 0'])), local);
  t.equal(srtp.ok, false);
  const video = answerOffer(parseSdp(offer(['m=video 4000 RTP/AVP 31'])), local);
  t.equal(video.ok, false);
  const pcmuOnly = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0'])), { ...local, codecs: ['PCMA'] });
  t.equal(pcmuOnly.ok, false, 'local codec list is honoured');
});

t.test('extra streams are rejected with port 0, keeping the m= line count', async (t) => {
  const r = answerOffer(
    parseSdp(offer(['m=video 5000 RTP/AVP 31', 'm=audio 4000 RTP/AVP 0', 'm=audio 4002 RTP/AVP 0'])),
    local,
  );
  if (!r.ok) throw new Error(r.reason);
  t.same(
    r.answer.media.map((m) => [m.media, m.port]),
    [
      ['video', 0],
      ['audio', 30400],
      ['audio', 0],
    ],
  );
  t.equal(r.media.remotePort, 4000);
});

t.test('direction attributes: hold by sendonly, inactive and legacy c=0.0.0.0', async (t) => {
  const cases: Array<[string[], string, boolean]> = [
    [['m=audio 4000 RTP/AVP 0', 'a=sendonly'], 'recvonly', true],
    [['m=audio 4000 RTP/AVP 0', 'a=recvonly'], 'sendonly', false],
    [['m=audio 4000 RTP/AVP 0', 'a=inactive'], 'inactive', true],
    [['m=audio 4000 RTP/AVP 0'], 'sendrecv', false],
  ];
  for (const [lines, expected, hold] of cases) {
    const r = answerOffer(parseSdp(offer(lines)), local);
    if (!r.ok) throw new Error(r.reason);
    t.equal(r.media.direction, expected, `${lines[1] ?? 'no attribute'} answered ${expected}`);
    t.equal(r.media.remoteHold, hold);
    t.match(serializeSdp(r.answer), new RegExp(`a=${expected}\\r\\n`));
  }
  const legacy = parseSdp(offer(['m=audio 4000 RTP/AVP 0', 'c=IN IP4 0.0.0.0']));
  t.equal(isHold(legacy.media[0], legacy), true, 'c=0.0.0.0 is hold');
  const r = answerOffer(legacy, local);
  t.equal(r.ok && r.media.direction, 'recvonly');
  const sessionLevel = parseSdp(offer(['a=sendonly', 'm=audio 4000 RTP/AVP 0']));
  t.equal(directionOf(sessionLevel.media[0], sessionLevel), 'sendonly', 'session-level attribute applies');
  const ours = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0'])), { ...local, direction: 'sendonly' });
  t.equal(ours.ok && ours.media.direction, 'sendonly', 'we hold the peer');
});

t.test('ptime follows a sane offer, else ours', async (t) => {
  const a = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0', 'a=ptime:30'])), local);
  t.equal(a.ok && a.media.ptimeMs, 30);
  const b = answerOffer(parseSdp(offer(['m=audio 4000 RTP/AVP 0', 'a=ptime:7'])), local);
  t.equal(b.ok && b.media.ptimeMs, 20);
});

t.test('IPv6 connection lines', async (t) => {
  const text =
    ['v=0', 'o=- 1 1 IN IP6 2001:db8::1', 's=-', 'c=IN IP6 2001:db8::1', 't=0 0', 'm=audio 4000 RTP/AVP 0'].join(
      '\r\n',
    ) + '\r\n';
  const r = answerOffer(parseSdp(text), { ...local, address: '::1' });
  if (!r.ok) throw new Error(r.reason);
  t.equal(r.media.addrType, 'IP6');
  t.equal(r.media.remoteAddress, '2001:db8::1');
  t.match(serializeSdp(r.answer), /c=IN IP6 ::1\r\n/);
  t.match(serializeSdp(r.answer), /o=- 42 1 IN IP6 ::1\r\n/);
});

t.test('offer, answer from a peer, accept', async (t) => {
  const ours = createOffer(local);
  const text = serializeSdp(ours);
  t.match(text, /m=audio 30400 RTP\/AVP 0 8 101\r\n/);
  t.match(text, /a=fmtp:101 0-16\r\n/);
  const peerAnswer = answerOffer(parseSdp(text), {
    address: '10.0.0.9',
    port: 7000,
    codecs: ['PCMA'],
    telephoneEvent: true,
  });
  if (!peerAnswer.ok) throw new Error(peerAnswer.reason);
  const accepted = acceptAnswer(ours, parseSdp(serializeSdp(peerAnswer.answer)), local);
  if (!accepted.ok) throw new Error(accepted.reason);
  t.equal(accepted.media.codec.name, 'PCMA');
  t.equal(accepted.media.remotePort, 7000);
  t.equal(accepted.media.telephoneEvent?.payloadType, 101);
  const zero = parseSdp(serializeSdp(peerAnswer.answer));
  zero.media[0].port = 0;
  t.equal(acceptAnswer(ours, zero, local).ok, false, 'rejected stream fails');
  zero.media.push(zero.media[0]);
  t.equal(acceptAnswer(ours, zero, local).ok, false, 'm= line count mismatch fails');
});
