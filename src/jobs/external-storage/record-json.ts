// The record delivered to external storage: the Conversation record as the API shows it at the end of the call (its
// settings, items, times, analysis: what the store holds), with the content the store does not hold under zero data
// retention put back from the live record's memory: the transcript, each item's text, each tool call's bodies.
// `audio_url` stays null (the recording is the object beside it), and Parley's additions about what happens after
// the call (`post_call`, `external_storage`) are left out: at this moment they say nothing yet.
import type { RecordContent } from '../../conversation/host.js';
import type { Conversation, ConversationItem } from '../../schemas/conversations.js';
import type { NewItem } from '../../store/conversations.js';

/** The delivered record: `stored` (the API's record of the conversation) with `content` put back. */
export function recordWithContent(stored: Conversation, content: RecordContent): Conversation {
  const byId = new Map<string, NewItem>();
  for (const item of content.items) if (item.id) byId.set(item.id, item);
  const items = stored.items.map((item): ConversationItem => {
    const kept = byId.get(item.id);
    if (!kept) return item;
    const calls = new Map((kept.tool_calls ?? []).map((c) => [c.id, c]));
    return {
      ...item,
      live_transcript: kept.live_transcript,
      ...(item.tool_calls
        ? {
            tool_calls: item.tool_calls.map((c) => {
              const call = calls.get(c.id);
              return call ? { ...c, request_body: call.request_body, response_body: call.response_body } : c;
            }),
          }
        : {}),
    };
  });
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { post_call, external_storage, ...record } = stored;
  return { ...record, live_transcript: content.liveTranscript, items };
}
