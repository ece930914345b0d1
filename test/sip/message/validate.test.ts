// validateRequest / validateResponse beyond the torture fixtures: 483 when forwarding, accepted schemes,
// Require on ACK and CANCEL, 415, response scalar checks.
import t from 'tap';
import {
  parseMessage,
  validateRequest,
  validateResponse,
  type SipRequest,
  type SipResponse,
} from '../../../sip/message/index.js';

function req(method: string, extra: string[] = [], uri = 'sip:bob@example.com', body = ''): SipRequest {
  return parseMessage(
    [
      `${method} ${uri} SIP/2.0`,
      'Via: SIP/2.0/UDP h.example.com;branch=z9hG4bKv1',
      'To: <sip:bob@example.com>',
      'From: <sip:alice@example.com>;tag=1',
      'Call-ID: v1@h',
      `CSeq: 1 ${method}`,
      ...extra,
      `Content-Length: ${body.length}`,
      '',
      body,
    ].join('\r\n'),
  ) as SipRequest;
}

t.test('Max-Forwards 0: 483 only for an element that forwards, and not for OPTIONS (RFC 3261 16.3)', async (t) => {
  t.equal(validateRequest(req('INVITE', ['Max-Forwards: 0'])), null, 'a UAS processes it');
  t.equal(validateRequest(req('INVITE', ['Max-Forwards: 0']), { forwarding: true })?.status, 483);
  t.equal(validateRequest(req('OPTIONS', ['Max-Forwards: 0']), { forwarding: true }), null, 'OPTIONS may be answered');
  t.equal(validateRequest(req('INVITE', ['Max-Forwards: 256']))?.status, 400, 'out of 0-255');
});

t.test('Request-URI schemes: sip and sips by default, others when configured (RFC 3261 8.2.2.1)', async (t) => {
  t.equal(validateRequest(req('INVITE', [], 'tel:+15551234'))?.status, 416);
  t.equal(validateRequest(req('INVITE', [], 'tel:+15551234'), { schemes: ['sip', 'tel'] }), null);
  t.equal(validateRequest(req('INVITE', [], 'sips:bob@example.com')), null);
});

t.test('Require: 420 with the unsupported tags, never for ACK or CANCEL (RFC 3261 8.2.2.3)', async (t) => {
  const r = validateRequest(req('INVITE', ['Require: timer, 100rel']), { supported: ['TIMER'] });
  t.same([r?.status, r?.unsupported], [420, ['100rel']]);
  t.equal(validateRequest(req('ACK', ['Require: 100rel'])), null);
  t.equal(validateRequest(req('CANCEL', ['Require: 100rel'])), null);
});

t.test('bodies of unaccepted types: 415 (RFC 3261 8.2.3)', async (t) => {
  const sdp = req('INVITE', ['Content-Type: application/sdp'], 'sip:bob@example.com', 'v=0\r\n');
  t.equal(validateRequest(sdp, { acceptedContentTypes: ['application/sdp'] }), null);
  const xml = req('INVITE', ['Content-Type: application/xml; charset=utf-8'], 'sip:bob@example.com', '<x/>');
  t.equal(validateRequest(xml, { acceptedContentTypes: ['application/sdp'] })?.status, 415);
  t.equal(validateRequest(xml), null, 'no check unless asked');
});

t.test('responses: mandatory headers, CSeq range, Retry-After and Warning syntax', async (t) => {
  const res = (extra: string[]) =>
    parseMessage(
      [
        'SIP/2.0 503 Service Unavailable',
        'Via: SIP/2.0/UDP h;branch=z9hG4bKr',
        'To: <sip:b@h>;tag=2',
        'From: <sip:a@h>;tag=1',
        'Call-ID: r1@h',
        'CSeq: 1 INVITE',
        ...extra,
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    ) as SipResponse;
  t.equal(validateResponse(res([])), null);
  t.equal(validateResponse(res(['Retry-After: 120 (maintenance);duration=60'])), null);
  t.match(validateResponse(res(['Retry-After: 99999999999'])), /Retry-After/);
  t.equal(validateResponse(res(['Warning: 399 proxy.example.com "odd"'])), null);
  t.match(validateResponse(res(['Warning: 1812 overture "In Progress"'])), /Warning/);
  const noCallId = res([]);
  noCallId.headers.delete('Call-ID');
  t.match(validateResponse(noCallId), /Call-ID/);
});
