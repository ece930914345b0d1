import t from 'tap';
import {
  AUDIO_FORMATS,
  durationMs,
  formatInfo,
  isAudioFormat,
  rtpTicksPerFrame,
  samplesPerFrame,
} from '../../src/media/format.js';

t.test('20 ms frame sizes of every format (docs/CONTRACTS.md)', async (t) => {
  const expected: Record<string, [number, number]> = {
    pcm_48000: [960, 1920],
    pcm_44100: [882, 1764],
    pcm_24000: [480, 960],
    pcm_22050: [441, 882],
    pcm_16000: [320, 640],
    pcm_8000: [160, 320],
    mulaw_8000: [160, 160],
    alaw_8000: [160, 160],
    opus_48000: [960, 0],
  };
  for (const f of AUDIO_FORMATS) {
    const info = formatInfo(f);
    t.same([info.samplesPerFrame, info.bytesPerFrame], expected[f], f);
  }
  t.equal(formatInfo('mulaw_8000').rtpPayloadType, 0, 'PCMU is static payload type 0');
  t.equal(formatInfo('alaw_8000').rtpPayloadType, 8, 'PCMA is static payload type 8');
  t.equal(rtpTicksPerFrame('opus_48000'), 960, 'Opus RTP clock is 48 kHz');
  t.equal(durationMs('mulaw_8000', 800), 100);
  t.throws(() => durationMs('opus_48000', 100), RangeError);
  t.throws(() => samplesPerFrame(11025, 20.5), RangeError);
  t.ok(isAudioFormat('pcm_16000'));
  t.notOk(isAudioFormat('mp3_44100'));
  t.throws(() => formatInfo('nope' as never), RangeError);
});
