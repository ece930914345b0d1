// The pieces of the post-call transcript that need no server: reading a stereo recording in windows (WAV and
// gzip, any chunking), splitting words into the items by their time spans, the record's lines, and reading a
// verbose_json transcription (words, else segments, else the text).
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { parseVerboseTranscription } from '../../src/engines/speech-http.js';
import { peak, recordingBytes, RecordingFormatError, stereoWindows } from '../../src/jobs/stereo-recording.js';
import {
  assignWords,
  ITEM_MATCH_TOLERANCE_MS,
  itemsOnTimeline,
  itemTexts,
  transcriptText,
} from '../../src/jobs/words.js';
import { stereoWav } from './recordings.js';

async function collect(bytes: AsyncIterable<Buffer>, windowSamples: number) {
  const out: { start: number; user: number[]; assistant: number[]; rate: number }[] = [];
  for await (const w of stereoWindows(bytes, windowSamples)) {
    out.push({ start: w.start, user: [...w.user], assistant: [...w.assistant], rate: w.sampleRate });
  }
  return out;
}

/** `bytes` in chunks of `size` (odd sizes split frames and samples). */
function chunked(bytes: Buffer, size: number): Readable {
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
}

t.test('a stereo recording is read in windows of each side, whatever the chunking, from WAV or gzip', async (t) => {
  const user = Int16Array.from({ length: 10 }, (_, i) => i + 1);
  const assistant = Int16Array.from({ length: 10 }, (_, i) => -(i + 1) * 100);
  const wav = stereoWav(user, assistant, 8000);
  const expected = [
    { start: 0, user: [1, 2, 3, 4], assistant: [-100, -200, -300, -400], rate: 8000 },
    { start: 4, user: [5, 6, 7, 8], assistant: [-500, -600, -700, -800], rate: 8000 },
    { start: 8, user: [9, 10], assistant: [-900, -1000], rate: 8000 },
  ];
  for (const size of [1, 3, 7, 44, 45, 1000]) {
    t.same(await collect(chunked(wav, size), 4), expected, `chunks of ${size} bytes`);
  }
  t.same(await collect(recordingBytes(chunked(gzipSync(wav), 5), 'wav.gz'), 4), expected, 'through gunzip');
  // A writer that never patched the data size (0): read to the end.
  const unpatched = Buffer.from(wav);
  unpatched.writeUInt32LE(0, 40);
  t.same(await collect(chunked(unpatched, 9), 4), expected, 'an unpatched data size reads to the end');
  // A data size shorter than the file: what follows is not audio.
  const trailing = Buffer.concat([wav, Buffer.from('LIST\u0004\u0000\u0000\u0000abcd', 'latin1')]);
  t.same(await collect(chunked(trailing, 13), 4), expected, 'bytes after the data chunk are not read as audio');
});

t.test('a file that is not a stereo 16-bit WAV is refused', async (t) => {
  await t.rejects(collect(Readable.from([Buffer.from('not a wav file at all')]), 4), RecordingFormatError);
  const mono = stereoWav(new Int16Array(4), new Int16Array(4), 8000);
  mono.writeUInt16LE(1, 22);
  await t.rejects(collect(Readable.from([mono]), 4), /expected stereo 16-bit PCM/);
  await t.rejects(collect(Readable.from([mono.subarray(0, 30)]), 4), /ends before its data/);
});

t.test('peak is the largest magnitude', async (t) => {
  t.equal(peak(Int16Array.from([0, 3, -7, 5])), 7);
  t.equal(peak(new Int16Array(0)), 0);
  t.equal(peak(Int16Array.from([-32768])), 32768);
});

t.test('words go to the item of their side whose span holds them, else the nearest within the tolerance', async (t) => {
  const start = Date.parse('2026-11-27T10:00:00.000Z');
  const items = itemsOnTimeline(
    [
      { id: 'u1', role: 'user', started_at: new Date(start + 1000), duration_ms: 2000 },
      { id: 'a1', role: 'assistant', started_at: new Date(start + 3500), duration_ms: 1500 },
      { id: 'u2', role: 'user', started_at: new Date(start + 6000), duration_ms: 1000 },
    ],
    start,
  );
  t.same(items[0], { id: 'u1', role: 'user', startMs: 1000, endMs: 3000 });
  const words = assignWords(
    [
      { role: 'assistant', word: 'how', start_ms: 3600, end_ms: 3800 },
      { role: 'user', word: 'hello', start_ms: 1100, end_ms: 1500 },
      // Past u1's end, within the tolerance: still u1.
      { role: 'user', word: 'there', start_ms: 3100, end_ms: 3300 },
      // The assistant's words never go to a user item, however close.
      { role: 'assistant', word: 'hm', start_ms: 6100, end_ms: 6200 },
      { role: 'user', word: 'bye', start_ms: 6100, end_ms: 6400 },
      // Far from every user item: none.
      { role: 'user', word: 'later', start_ms: 9000 + ITEM_MATCH_TOLERANCE_MS, end_ms: 9200 + ITEM_MATCH_TOLERANCE_MS },
    ],
    items,
  );
  t.same(
    words.map((w) => [w.word, w.item_id]),
    [
      ['hello', 'u1'],
      ['there', 'u1'],
      ['how', 'a1'],
      ['hm', 'a1'],
      ['bye', 'u2'],
      ['later', null],
    ],
    'in time order, each with its item',
  );
  t.same(itemTexts(words, items), [
    { id: 'u1', text: 'hello there' },
    { id: 'a1', text: 'how hm' },
    { id: 'u2', text: 'bye' },
  ]);
  t.equal(transcriptText(words), 'user: hello there\nassistant: how hm\nuser: bye\nuser: later');
  t.same(
    itemTexts([], items).map((i) => i.text),
    [null, null, null],
    'an item nothing was heard in has no text',
  );
  t.equal(transcriptText([]), null, 'no words, no transcript');
});

t.test('words of no item split into lines at long pauses', async (t) => {
  const words = assignWords(
    [
      { role: 'user', word: 'one', start_ms: 0, end_ms: 200 },
      { role: 'user', word: 'two', start_ms: 500, end_ms: 700 },
      { role: 'assistant', word: 'yes', start_ms: 800, end_ms: 900 },
      { role: 'user', word: 'three', start_ms: 5000, end_ms: 5200 },
    ],
    [],
  );
  t.equal(transcriptText(words), 'user: one two\nassistant: yes\nuser: three');
});

t.test('a verbose_json transcription: its words, else its segments spread, else its text over the audio', async (t) => {
  t.same(
    parseVerboseTranscription(
      {
        text: ' Hi there. ',
        words: [
          { word: ' Hi', start: 0.1, end: 0.3 },
          { word: 'there', start: 0.4, end: 0.8 },
        ],
      },
      2,
    ),
    {
      text: 'Hi there.',
      words: [
        { word: 'Hi', start: 0.1, end: 0.3 },
        { word: 'there', start: 0.4, end: 0.8 },
      ],
    },
  );
  t.same(parseVerboseTranscription({ text: 'a b', segments: [{ start: 1, end: 2, text: ' a b' }] }, 5).words, [
    { word: 'a', start: 1, end: 1.5 },
    { word: 'b', start: 1.5, end: 2 },
  ]);
  t.same(
    parseVerboseTranscription({ text: 'x y z w' }, 4).words.map((w) => [w.word, w.start, w.end]),
    [
      ['x', 0, 1],
      ['y', 1, 2],
      ['z', 2, 3],
      ['w', 3, 4],
    ],
  );
  t.same(parseVerboseTranscription({ text: '' }, 4).words, [], 'silence: no words');
  t.throws(() => parseVerboseTranscription({ words: [] }, 1), /not a verbose_json answer/);
});
