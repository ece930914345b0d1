// baresip, a real user agent, against a node as a user runs it (real media workers, the echo engine, PostgreSQL):
// it calls Parley sending a recorded prompt (its aufile source, a WAV: a second of silence, the prompt, silence) and
// records what it hears (sndfile), which is the echo of its own turn; its RFC 4733 keys (sndcode) reach the record;
// Parley calls it through POST /v1/conversations/outbound_call, it answers like a person ("Hello?", a pause: the
// answering-machine detection decides `human`), says its prompt, hears the echo and hangs up, and the call is saved.
// baresip 1.0 sends keys as RFC 4733 only (no SIP INFO mode): INFO digits are SIPp's (uac_hangs_up.xml,
// node-calls-kamailio.test.ts).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { soundFile } from '../helpers/debian-packages.js';
import { until } from '../helpers/wait.js';
import { loadPrompt } from '../media/speech.js';
import { startBaresip, tempDir } from '../sip/peers/peers.js';
import { bestCorrelation, envelope } from './harness.js';
import { agentWithNumber } from './sip-node.js';
import { freeUdpPort } from './sipp-scenario.js';
import { startPhoneNode, userTranscripts } from './phone-node.js';

t.setTimeout(300_000);

const OWN = '+14155550100';
const BARESIP = '+14155550123';
const PROMPT = 'call-forwarding';
/** What the callee of an outbound call says on answering, after CALLEE_ANSWERS_AFTER_S, then a pause of CALLEE_PAUSE_S. */
const HELLO = 'hello';
const CALLEE_ANSWERS_AFTER_S = 0.5;
const CALLEE_PAUSE_S = 2;
/** Envelope frames (20 ms) heard past the echo's expected end before the callee hangs up. */
const ECHO_MARGIN_FRAMES = 25;
const LOUD_RMS = 500;
/** baresip's RTP ports: a range of its own, away from the node's. */
const BARESIP_RTP_SPAN = 20;

/**
 * What baresip heard on its calls so far (sndfile's dump-*-dec.wav, oldest first), as 8 kHz PCM: the samples after
 * the data chunk's header, whose size is written only when the call ends.
 */
function heard(recDir: string): Int16Array[] {
  return readdirSync(recDir)
    .filter((f) => f.endsWith('-dec.wav'))
    .sort()
    .map((f) => {
      const bytes = readFileSync(join(recDir, f));
      const data = bytes.indexOf('data');
      if (data < 0) return new Int16Array(0);
      const body = bytes.subarray(data + 8);
      return new Int16Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length - (body.length % 2)));
    });
}

const loudFrames = (pcm: Int16Array) => envelope(pcm).filter((e) => e > LOUD_RMS).length;

t.test('baresip calls a node and is called by it', async (t) => {
  const sipPort = await freeUdpPort();
  const node = await startPhoneNode({
    trunks: [{ name: 'local', inbound: { sources: ['127.0.0.1'] }, outbound: { uri: `sip:127.0.0.1:${sipPort}` } }],
  });
  t.teardown(() => node.stop());
  await agentWithNumber(node.client, 'phone', OWN, { audio_speed: 1 });

  const dir = tempDir('baresip-speech');
  const wav = join(dir, 'speech.wav');
  execFileSync('sox', [
    soundFile(PROMPT),
    '-r',
    '8000',
    '-c',
    '1',
    '-b',
    '16',
    '-e',
    'signed-integer',
    wav,
    'pad',
    '1',
    '30',
  ]);
  const rtpBase = node.rtpPorts.max + 1 + 2 * Math.floor(Math.random() * 50);
  const {
    peer,
    ctl,
    dir: baresipDir,
  } = await startBaresip({
    sipPort,
    ctrlPort: await freeUdpPort(),
    rtpPorts: `${rtpBase}-${rtpBase + BARESIP_RTP_SPAN}`,
    user: BARESIP,
    audioIn: wav,
  });
  t.teardown(() => {
    ctl.close();
    return peer.stop();
  });
  const recDir = join(baresipDir, 'rec');
  const prompt = loadPrompt(PROMPT);

  t.test('inbound: baresip hears the echo of its prompt; its keys are on the record', async (t) => {
    const before = await node.conversationIds();
    const since = ctl.events.length;
    await ctl.command('dial', `sip:${OWN}@127.0.0.1:${node.sipPort}`);
    await ctl.waitEvent('CALL_ESTABLISHED', 10_000, since);
    await until(() => loudFrames(heard(recDir).at(-1) ?? new Int16Array(0)) >= loudFrames(prompt) * 0.8, {
      what: 'baresip hearing the echo',
      timeoutMs: 20_000,
      intervalMs: 200,
    });
    // Keys as a person presses them, a moment apart.
    await ctl.command('sndcode', '4');
    await new Promise((r) => setTimeout(r, 300));
    await ctl.command('sndcode', '2');
    await new Promise((r) => setTimeout(r, 300));
    await ctl.command('sndcode', '#');
    // The entry ended by #: the engine answers it; then baresip hangs up.
    await new Promise((r) => setTimeout(r, 1500));
    await ctl.command('hangup');
    await ctl.waitEvent('CALL_CLOSED', 10_000, since);

    const echo = heard(recDir).at(-1)!;
    const { r } = bestCorrelation(envelope(echo), envelope(prompt));
    t.ok(r > 0.8, `what baresip heard follows its prompt's energy envelope (r = ${r.toFixed(3)})`);
    const [id] = (await node.conversationIds()).filter((c) => !before.includes(c));
    const record = await node.endedConversation(id!);
    t.equal(record.ended_by, 'user');
    t.match(record.call_info, { from_phone_number: BARESIP, to_phone_number: OWN });
    const users = (record.items as { role: string; duration_ms: number }[]).filter((i) => i.role === 'user');
    t.ok(
      (users[0]?.duration_ms ?? 0) >= (prompt.length / 8) * 0.6,
      `its turn is on the record (${users[0]?.duration_ms} ms)`,
    );
    t.same(userTranscripts(record).slice(1), ['DTMF 42#'], 'its RFC 4733 keys, one entry');
  });

  t.test(
    'outbound: Parley calls baresip, which answers like a person, talks and hangs up; the call is saved',
    async (t) => {
      // Answering-machine detection runs on every answered outbound call, and the conversation takes no turn until it
      // is decided: the callee answers as a person does, a short "Hello?" and a pause (`human`), then says its prompt.
      // baresip's aufile source opens its file on each call.
      const answering = join(dir, 'answering.wav');
      execFileSync('sh', [
        '-c',
        'sox "$1" -p pad "$2" "$3" | sox -t sox - "$4" -r 8000 -c 1 -b 16 -e signed-integer "$5" pad 0 30',
        'sh',
        soundFile(HELLO),
        `${CALLEE_ANSWERS_AFTER_S}`,
        `${CALLEE_PAUSE_S}`,
        soundFile(PROMPT),
        answering,
      ]);
      renameSync(answering, wav);
      const since = ctl.events.length;
      const heardBefore = heard(recDir).length;
      const r = await node.client.post('/v1/conversations/outbound_call', {
        to_phone_number: BARESIP,
        config: { agent: 'phone' },
      });
      t.equal(r.status, 201, JSON.stringify(r.body));
      await ctl.waitEvent('CALL_ESTABLISHED', 10_000, since);
      await until(
        () => heard(recDir).length > heardBefore && loudFrames(heard(recDir).at(-1)!) >= loudFrames(prompt) * 0.8,
        {
          what: 'baresip hearing the echo',
          timeoutMs: 20_000,
          intervalMs: 200,
        },
      );
      // The whole echo heard: a prompt's length (and a margin) past its first loud frame, before baresip hangs up.
      const promptFrames = envelope(prompt).length;
      await until(
        () => {
          const e = envelope(heard(recDir).at(-1)!);
          const first = e.findIndex((x) => x > LOUD_RMS);
          return first >= 0 && e.length >= first + promptFrames + ECHO_MARGIN_FRAMES;
        },
        { what: 'the whole echo heard', timeoutMs: 20_000, intervalMs: 200 },
      );
      await ctl.command('hangup');
      await ctl.waitEvent('CALL_CLOSED', 10_000, since);
      const echo = heard(recDir).at(-1)!;
      const { r: fit } = bestCorrelation(envelope(echo), envelope(prompt));
      t.ok(fit > 0.8, `what baresip heard follows its prompt's energy envelope (r = ${fit.toFixed(3)})`);
      const record = await node.endedConversation(r.body.conversation_id);
      t.equal(record.ended_by, 'user');
      t.equal(record.origin, 'telephony-outbound');
      t.match(record.call_info, { from_phone_number: OWN, to_phone_number: BARESIP, telephony_call_sid: /\S/ });
      t.match(
        record.metadata,
        { answering_machine: { result: 'human', reason: 'short_answer' } },
        'detection: a person answered',
      );
      const users = (record.items as { role: string; duration_ms: number }[]).filter((i) => i.role === 'user');
      t.equal(users.length, 1, 'one turn: the "Hello?" was heard by the detection, not taken as a turn');
      t.ok(
        (users[0]?.duration_ms ?? 0) >= (prompt.length / 8) * 0.6,
        `its prompt is the turn on the record (${users[0]?.duration_ms} ms)`,
      );
    },
  );
});
