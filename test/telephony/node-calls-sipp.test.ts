// Phone calls end to end with SIPp against a node as a user runs it (`npm start`: real media workers, the echo
// engine, PostgreSQL): inbound calls streaming a recorded prompt as PCMU and as PCMA, then RFC 4733 digits from
// SIPp's captures, come back as the echo of the caller's turn on RTP, and the turn and the keys (the last entry
// still open at the hang-up) are on the saved record; speech from the first packet (while the conversation starts)
// comes back whole; a caller hanging up mid-sentence leaves that turn on the
// record; refusals (unknown number 404, untrusted source 403, no common codec 488, a flood rate-limited 503);
// outbound calls to SIPp callees: answered (201, then BYE from either side), never answered (409 no_answer),
// busy (409 sip_call_failed), answered and hung up at once (409 call_ended), a digest challenge answered; an
// outbound record names the SIP Call-ID and both numbers.
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createRtpPacketView, decodeView } from '../../src/media/rtp.js';
import { SIPP_CAPTURES_DIR } from '../helpers/debian-packages.js';
import { until } from '../helpers/wait.js';
import { loadPrompt } from '../media/speech.js';
import { fillTemplate, tempDir } from '../sip/peers/peers.js';
import { bestCorrelation, envelope, g711Decode, g711Frames } from './harness.js';
import { captureUdpFrom, type CapturedDatagram } from './rtp-capture.js';
import { agentWithNumber } from './sip-node.js';
import { freeUdpPort, headerOf, runSipp, sippCompleted, startSippCallee } from './sipp-scenario.js';
import { startPhoneNode, userTranscripts, type PhoneNode } from './phone-node.js';

t.setTimeout(600_000);

const OWN = '+14155550100';
const TO = '+14155550123';
const PT = { PCMU: 0, PCMA: 8 } as const;
/** Frames of the caller's speech loud enough to count as speech (RMS of a 20 ms frame). */
const LOUD_RMS = 500;
const LEAD_SILENCE_SAMPLES = 8000;

/** A working folder for SIPp's media scenario: the prompt as raw G.711, a link to SIPp's captures, the scenario. */
function speechScenario(
  codec: 'PCMU' | 'PCMA',
  prompt: string,
  fields: Record<string, string>,
  keys = true,
  speechFirst = false,
): { cwd: string; scenario: string; pcm: Int16Array } {
  const cwd = tempDir('sipp-speech');
  const full = loadPrompt(prompt);
  // speechFirst: the prompt from its first loud frame, in the very first packet, while the conversation starts.
  const pcm = speechFirst ? full.subarray(envelope(full).findIndex((e) => e > LOUD_RMS) * 160) : full;
  // A phone sends RTP from the answer on, silence included: a second of it before the prompt (unless speechFirst),
  // and after it (the VAD ends the turn on it).
  const silence = g711Frames(new Int16Array(LEAD_SILENCE_SAMPLES), codec);
  writeFileSync(
    join(cwd, 'speech.g711'),
    Buffer.concat([...(speechFirst ? [] : silence), ...g711Frames(pcm, codec), ...silence]),
  );
  symlinkSync(SIPP_CAPTURES_DIR, join(cwd, 'pcap'));
  const scenario = join(cwd, 'scenario.xml');
  const noKeys = { FIRST_KEY: '', SECOND_KEY: '', LAST_KEY: '' };
  const text = fillTemplate('sipp/uac_speech_dtmf.xml', {
    CODEC: codec,
    PT: `${PT[codec]}`,
    AUDIO: 'speech.g711',
    ...(keys ? {} : noKeys),
    ...fields,
  });
  writeFileSync(scenario, keys ? text : text.replace(/<!-- keys -->[\s\S]*<!-- \/keys -->/, ''));
  return { cwd, scenario, pcm };
}

/** The audio payloads (decoded) of RTP packets of payload type `pt` in a capture, in arrival order. */
function heardAudio(datagrams: CapturedDatagram[], codec: 'PCMU' | 'PCMA'): Int16Array {
  const view = createRtpPacketView();
  const frames: Int16Array[] = [];
  for (const d of datagrams) {
    if (decodeView(d.data, view, d.data.length) !== 'ok' || view.payloadType !== PT[codec]) continue;
    frames.push(g711Decode(d.data.subarray(view.payloadOffset, view.payloadOffset + view.payloadLength), codec));
  }
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((at, f) => (out.set(f, at), at + f.length), 0);
  return out;
}

async function onlyNewConversation(node: PhoneNode, before: string[]): Promise<string> {
  const ids = (await node.conversationIds()).filter((id) => !before.includes(id));
  if (ids.length !== 1) throw new Error(`expected one new conversation, got ${JSON.stringify(ids)}`);
  return ids[0]!;
}

t.test('a node with real media workers, SIPp on both sides', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startPhoneNode({
    env: { PARLEY_RING_TIMEOUT_SEC: '3', PARLEY_SIP_INVITE_RATE_PER_SEC: '5', PARLEY_SIP_INVITE_BURST: '10' },
    trunks: [
      {
        name: 'carrier',
        inbound: { sources: ['127.0.0.1', '127.0.0.3'] },
        outbound: { uri: `sip:127.0.0.1:${calleePort}`, auth: { username: 'parley', password: 's3cret' } },
      },
    ],
  });
  t.teardown(() => node.stop());
  await agentWithNumber(node.client, 'phone', OWN, { audio_speed: 1 });

  for (const codec of ['PCMU', 'PCMA'] as const) {
    t.test(`inbound ${codec}: the echo comes back on RTP; the turn and the keys are on the record`, async (t) => {
      const before = await node.conversationIds();
      // Speech, then 1 and 4 (one entry, ended by the pause after it, answered), then 7, the BYE 300 ms behind it.
      const { cwd, scenario, pcm } = speechScenario(codec, 'call-forwarding', {
        AFTER_SPEECH_MS: '6000',
        FIRST_KEY: '1',
        SECOND_KEY: '4',
        LAST_KEY: '7',
        BYE_AFTER_MS: '300',
      });
      const capture = await captureUdpFrom(node.rtpPorts.min, node.rtpPorts.max);
      let sent: CapturedDatagram[] = [];
      const run = await runSipp({
        scenario,
        cwd,
        target: `127.0.0.1:${node.sipPort}`,
        service: OWN,
        timeoutMs: 60_000,
      }).finally(async () => {
        sent = await capture.stop();
      });
      sippCompleted(t, run);
      const answer = run.received.find((m) => m.startsWith('SIP/2.0 200 ') && /^m=audio/m.test(m)) ?? '';
      t.match(
        answer,
        new RegExp(`^m=audio \\d+ RTP/AVP ${PT[codec]} 101$`, 'm'),
        `the answer chose ${codec} and telephone-event`,
      );
      const rtpPort = Number(/^m=audio (\d+) /m.exec(answer)?.[1]);
      t.ok(
        rtpPort >= node.rtpPorts.min && rtpPort <= node.rtpPorts.max,
        "the answer names a port of the node's RTP range",
      );

      const heard = heardAudio(
        sent.filter((d) => d.srcPort === rtpPort),
        codec,
      );
      const promptEnvelope = envelope(pcm);
      const loudSent = promptEnvelope.filter((e) => e > LOUD_RMS).length;
      const loudHeard = envelope(heard).filter((e) => e > LOUD_RMS).length;
      t.ok(loudHeard >= loudSent * 0.8, `the echo came back on RTP (${loudHeard} loud frames for ${loudSent} sent)`);
      const { r } = bestCorrelation(envelope(heard), promptEnvelope);
      t.ok(r > 0.8, `the echo follows the prompt's energy envelope (r = ${r.toFixed(3)})`);

      const id = await onlyNewConversation(node, before);
      const record = await node.endedConversation(id);
      t.equal(record.ended_by, 'user', 'the caller hung up');
      t.match(record.call_info, { to_phone_number: OWN, from_phone_number: 'anonymous' });
      t.match(record.call_info.telephony_call_sid, /\S/, 'the SIP Call-ID is on the record');
      const users = (record.items as { role: string; live_transcript: string | null; duration_ms: number }[]).filter(
        (i) => i.role === 'user',
      );
      t.ok(
        users[0] && users[0].duration_ms >= (pcm.length / 8) * 0.6,
        `the caller's turn is the first user item (${users[0]?.duration_ms} ms)`,
      );
      t.same(
        userTranscripts(record).slice(1),
        ['DTMF 14', 'DTMF 7'],
        'the keys: one entry ended by a pause, and the one open at the hang-up',
      );
      t.ok(
        (record.items as { role: string }[]).some((i) => i.role === 'assistant'),
        "the assistant's replies are on the record",
      );
      // The post-call work runs for a phone call as for any conversation: without a speech-to-text model, the
      // second-pass transcript is skipped and says why.
      let transcriptJob: { status: string; reason?: string } | undefined;
      await until(
        async () => {
          const jobs = (await node.endedConversation(id)).post_call?.jobs as
            { kind: string; status: string; reason?: string }[] | undefined;
          transcriptJob = jobs?.find((j) => j.kind === 'post_call_transcript');
          return (
            transcriptJob !== undefined && transcriptJob.status !== 'pending' && transcriptJob.status !== 'running'
          );
        },
        { what: "the call's post-call transcript job settling", timeoutMs: 30_000 },
      );
      t.match(transcriptJob, { status: 'skipped', reason: /speech-to-text/ }, "the call's post-call transcript job");
    });
  }

  t.test('inbound PCMU, speech from the first packet: it comes back, one turn on the record', async (t) => {
    const before = await node.conversationIds();
    const { cwd, scenario, pcm } = speechScenario(
      'PCMU',
      'call-forwarding',
      { AFTER_SPEECH_MS: '5000', BYE_AFTER_MS: '0' },
      false,
      true,
    );
    const capture = await captureUdpFrom(node.rtpPorts.min, node.rtpPorts.max);
    let sent: CapturedDatagram[] = [];
    const run = await runSipp({
      scenario,
      cwd,
      target: `127.0.0.1:${node.sipPort}`,
      service: OWN,
      timeoutMs: 60_000,
    }).finally(async () => {
      sent = await capture.stop();
    });
    sippCompleted(t, run);
    const answer = run.received.find((m) => m.startsWith('SIP/2.0 200 ') && /^m=audio/m.test(m)) ?? '';
    const rtpPort = Number(/^m=audio (\d+) /m.exec(answer)?.[1]);
    const loudSent = envelope(pcm).filter((e) => e > LOUD_RMS).length;
    const loudHeard = envelope(
      heardAudio(
        sent.filter((d) => d.srcPort === rtpPort),
        'PCMU',
      ),
    ).filter((e) => e > LOUD_RMS).length;
    // The audio before the conversation was live is kept: the echo holds the speech's first frames too (the VAD's
    // start-up may leave out its first 40 ms: the prebuffer reaches back 500 ms from the start decision).
    t.ok(loudHeard >= loudSent * 0.9, `the speech echoed (${loudHeard} loud frames for ${loudSent} sent)`);
    const record = await node.endedConversation(await onlyNewConversation(node, before));
    const users = (record.items as { role: string; duration_ms: number }[]).filter((i) => i.role === 'user');
    t.equal(users.length, 1, 'one user turn');
    t.ok(
      (record.items as { role: string }[]).some((i) => i.role === 'assistant'),
      'answered',
    );
  });

  t.test('a caller hanging up mid-sentence: that turn is on the record', async (t) => {
    const before = await node.conversationIds();
    // vm-intro is 5.7 s of speech after a second of silence: the BYE comes 2 s into it, no key pressed.
    const { cwd, scenario } = speechScenario('PCMU', 'vm-intro', { AFTER_SPEECH_MS: '3000', BYE_AFTER_MS: '0' }, false);
    const run = await runSipp({ scenario, cwd, target: `127.0.0.1:${node.sipPort}`, service: OWN, timeoutMs: 60_000 });
    sippCompleted(t, run);
    const id = await onlyNewConversation(node, before);
    const record = await node.endedConversation(id);
    const users = (record.items as { role: string; duration_ms: number }[]).filter((i) => i.role === 'user');
    t.equal(users.length, 1, 'one user item: the turn under way at the hang-up');
    t.ok((users[0]?.duration_ms ?? 0) >= 1000, `it lasts from its start to the hang-up (${users[0]?.duration_ms} ms)`);
  });

  const PCMU_OFFER = { pt: '0', rtpmap: '0 PCMU/8000' };
  const finalOf = (run: { received: string[] }) => run.received.find((m) => /^SIP\/2\.0 [2-6]\d\d /.test(m)) ?? '';

  t.test('refused: unknown number 404, untrusted source 403, no common codec 488; none recorded', async (t) => {
    const before = await node.conversationIds();
    const target = `127.0.0.1:${node.sipPort}`;
    const unknown = await runSipp({ scenario: 'uac_refused.xml', target, service: '+14155550999', keys: PCMU_OFFER });
    t.match(finalOf(unknown), /^SIP\/2\.0 404 /, 'an unknown number');
    const stranger = await runSipp({
      scenario: 'uac_refused.xml',
      target,
      service: OWN,
      keys: PCMU_OFFER,
      localIp: '127.0.0.2',
    });
    t.match(finalOf(stranger), /^SIP\/2\.0 403 /, 'a source of no trunk');
    const g729 = await runSipp({
      scenario: 'uac_refused.xml',
      target,
      service: OWN,
      keys: { pt: '18', rtpmap: '18 G729/8000' },
    });
    t.match(finalOf(g729), /^SIP\/2\.0 488 /, 'an offer without G.711');
    t.match(headerOf(finalOf(g729), 'Warning'), /^304 /);
    t.same(await node.conversationIds(), before, 'no record of a refused call');
  });

  t.test('a flood from one source: 503 with Retry-After past its burst; other sources still answered', async (t) => {
    const flood = await runSipp({
      scenario: 'uac_refused.xml',
      target: `127.0.0.1:${node.sipPort}`,
      service: '+14155550999',
      keys: PCMU_OFFER,
      calls: 30,
      rate: 200,
      localIp: '127.0.0.3',
    });
    const finals = flood.received.filter((m) => /^SIP\/2\.0 [2-6]\d\d /.test(m));
    t.equal(finals.length, 30, 'every INVITE answered');
    const limited = finals.filter((m) => m.startsWith('SIP/2.0 503 '));
    t.ok(limited.length >= 15, `past the burst of 10, refused for the rate (${limited.length} of 30)`);
    t.ok(
      limited.every((m) => Number(headerOf(m, 'Retry-After')) >= 1),
      'each 503 says when to retry',
    );
    const other = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sipPort}` });
    t.same(other.statuses, [200], 'another source is answered meanwhile');
  });

  // Outbound: one SIPp callee at a time on the trunk's port.
  const callee = (scenario: string | { builtin: string }) =>
    startSippCallee({ scenario, port: calleePort, timeoutMs: 60_000 });
  const place = () =>
    node.client.post('/v1/conversations/outbound_call', { to_phone_number: TO, config: { agent: 'phone' } });
  // The 201 comes once the media worker has written the record: read or canceled at once, without waiting.
  const cancel = (id: string) => node.client.post(`/v1/conversations/${id}/cancel`);

  t.test(
    'outbound, answered, the callee hangs up: 201, the record saved with the Call-ID and both numbers',
    async (t) => {
      const sipp = await callee('uas_answer_hangup.xml');
      const r = await place();
      t.equal(r.status, 201, JSON.stringify(r.body));
      const run = await sipp.done;
      sippCompleted(t, run, 'the callee hung up, its BYE answered');
      const record = await node.endedConversation(r.body.conversation_id);
      t.equal(record.ended_by, 'user');
      t.equal(record.origin, 'telephony-outbound');
      const invite = run.received.find((m) => m.startsWith('INVITE ')) ?? '';
      t.same(record.call_info, {
        from_phone_number: OWN,
        to_phone_number: TO,
        telephony_call_sid: headerOf(invite, 'Call-ID'),
      });
    },
  );

  t.test(
    'outbound, answered, Parley hangs up (the conversation canceled): BYE to the callee, the record saved',
    async (t) => {
      const sipp = await callee({ builtin: 'uas' });
      const r = await place();
      t.equal(r.status, 201, JSON.stringify(r.body));
      const read = await node.conversation(r.body.conversation_id);
      t.equal(read.status, 200, 'the record readable right after the 201');
      t.equal(read.body.origin, 'telephony-outbound');
      const c = await cancel(r.body.conversation_id);
      t.equal(c.status, 200, JSON.stringify(c.body));
      sippCompleted(t, await sipp.done, 'the callee got its BYE');
      const ending =
        node.process
          .output()
          .split('\n')
          .find((l) => l.includes(r.body.conversation_id) && l.includes('"msg":"ending the call"')) ?? '';
      t.match(ending, /"why":"canceled through the API"/, 'the call ended for the cancel (not later, for want of RTP)');
      const record = await node.endedConversation(r.body.conversation_id);
      t.equal(record.ended_by, 'user_canceled');
    },
  );

  t.test("outbound, digest: the callee's 401 answered with the trunk's credentials", async (t) => {
    const sipp = await callee('uas_digest_challenge.xml');
    const r = await place();
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal((await cancel(r.body.conversation_id)).status, 200);
    const run = await sipp.done;
    sippCompleted(t, run, 'the digest verified, the BYE received');
    t.match(
      headerOf(run.received.filter((m) => m.startsWith('INVITE '))[1] ?? '', 'Authorization'),
      /^Digest .*username="parley"/,
    );
    await node.endedConversation(r.body.conversation_id);
  });

  for (const [scenario, status, code, what] of [
    ['uas_ring_forever.xml', 409, 'no_answer', 'never answered'],
    ['uas_busy.xml', 409, 'sip_call_failed', 'busy (486)'],
    ['uas_answer_bye.xml', 409, 'call_ended', 'answered and hung up at once'],
  ] as const) {
    t.test(`outbound, ${what}: ${status} ${code}, no record`, async (t) => {
      const before = await node.conversationIds();
      const sipp = await callee(scenario);
      const r = await place();
      t.equal(r.status, status, JSON.stringify(r.body));
      t.equal(r.body.error?.code, code);
      sippCompleted(t, await sipp.done);
      t.same(await node.conversationIds(), before, 'no record');
    });
  }
});
