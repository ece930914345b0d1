// The conversation's far end over a FrameSink (src/conversation/host.ts ConversationClient), and the observer
// socket's feed (ConversationObserver). JSON text frames; assistant audio as base64 `audio_chunk` events, or as
// binary frames when the client negotiated `binary_audio` in `config` (docs/sts-protocol.md).
import type { ConversationClient, ConversationObserver } from '../conversation/host.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { FrameSink } from './sink.js';

/** An audio_chunk event's JSON around its base64, built by concatenation (one string per frame, no object). */
const AUDIO_HEAD = '{"type":"audio_chunk","audio":"';
const AUDIO_MID = '","text":';
const AUDIO_TAIL = '}';
/** Under binary_audio, the text that goes with a frame rides on an audio_chunk event with empty audio. */
const TEXT_ONLY_HEAD = '{"type":"audio_chunk","audio":"","text":';

/** RFC 6455 7.4.1: 1000 normal closure. */
export const CLOSE_NORMAL = 1000;

function base64(frame: Uint8Array): string {
  return Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64');
}

export interface StsClientHooks {
  /** Seen before it is sent: the transport learns the conversation's id from `conversation_created`. */
  onEvent?(event: ServerEvent): void;
  /** The conversation closed the far end. */
  onClose?(): void;
}

export class StsClient implements ConversationClient {
  binaryAudio = false;

  constructor(
    private sink: FrameSink,
    private readonly hooks: StsClientHooks = {},
  ) {}

  /** A reconnecting socket takes over (the conversation keeps this client). */
  attach(sink: FrameSink): void {
    this.sink = sink;
  }

  get current(): FrameSink {
    return this.sink;
  }

  send(event: ServerEvent): void {
    this.hooks.onEvent?.(event);
    this.sink.text(JSON.stringify(event));
  }

  sendAudio(frame: Uint8Array, text: string): boolean {
    // A binary frame alone: audio() refuses it when backed up (asking writable first would read the socket's
    // buffered amount twice per frame).
    if (this.binaryAudio && text === '') return this.sink.audio(frame);
    // Text goes out only with its audio, and a text frame is never refused for backpressure: ask first.
    if (!this.sink.writable) return false;
    if (this.binaryAudio) {
      if (text !== '' && !this.sink.text(TEXT_ONLY_HEAD + JSON.stringify(text) + AUDIO_TAIL)) return false;
      return this.sink.audio(frame);
    }
    return this.sink.text(AUDIO_HEAD + base64(frame) + AUDIO_MID + JSON.stringify(text) + AUDIO_TAIL);
  }

  close(code: number, reason: string): void {
    this.hooks.onClose?.();
    this.sink.end(code, reason);
  }
}

/**
 * The observer socket's feed: the conversation's server events as they are, and both sides' audio as
 * `live_audio {side, sample_rate, audio}` events (base64 of 16-bit little-endian PCM), dropped while the observer
 * is backed up. Ends with `conversation_ended {ended_by}` and a normal close.
 */
export function observerFeed(sink: FrameSink): ConversationObserver {
  return {
    event(event) {
      sink.text(JSON.stringify(event));
    },
    audio(side, pcm, sampleRate) {
      if (!sink.writable) return;
      const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
      sink.text(`{"type":"live_audio","side":"${side}","sample_rate":${sampleRate},"audio":"${base64(bytes)}"}`);
    },
    closed(endedBy: EndedBy) {
      sink.text(JSON.stringify({ type: 'conversation_ended', ended_by: endedBy }));
      sink.end(CLOSE_NORMAL, endedBy);
    },
  };
}
