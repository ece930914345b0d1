// The text the post-call judgement reads (extraction, evaluations): the post-call transcript where there is one,
// else the live one, else (once redacted, when they are gone) the redacted one; or why there is none.
import type { PostCallConversation } from '../store/post-call.js';

export type ConversationText = { text: string; source: 'post_call' | 'live' | 'redacted' } | { missing: string };

export function conversationText(c: PostCallConversation): ConversationText {
  if (c.retainsNothing) return { missing: 'zero data retention: the conversation keeps no transcript' };
  if (c.transcriptsDeletedAt) return { missing: 'the transcripts were deleted' };
  if (c.isRedacted) {
    // A rerun after the redaction (POST .../extractions): only the redacted text is left.
    return c.redactedTranscript
      ? { text: c.redactedTranscript, source: 'redacted' }
      : { missing: 'the conversation has no transcript (nothing was said)' };
  }
  if (c.postCallTranscript) return { text: c.postCallTranscript, source: 'post_call' };
  if (c.liveTranscript) return { text: c.liveTranscript, source: 'live' };
  return { missing: 'the conversation has no transcript (nothing was said)' };
}

/** How a transcript is laid out for the model. */
export const TRANSCRIPT_NOTE =
  'Each line of the transcript is one turn: `user:` is the caller, `assistant:` the voice assistant.';
