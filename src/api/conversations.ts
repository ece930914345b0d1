// Conversations: GET /v1/conversations/{id}, GET /v1/conversations, GET /v1/conversations/{id}/extractions,
// DELETE /v1/conversations/{id} (content), POST /v1/conversations/{id}/cancel, and the extraction rerun
// POST /v1/conversations/{id}/extractions. API keys only: the auth hook answers 403 to session tokens (they are for
// the WebSocket side).
import {
  cancelConversation,
  conversationExtractions,
  deleteConversationContent,
  listProjectConversations,
  ownedConversation,
  rerunConversationExtraction,
} from '../domain/conversations.js';
import {
  conversationIdParams,
  conversationResponse,
  extractionsResponse,
  getConversationQuery,
  listConversationsQuery,
  listConversationsResponse,
  successResponse,
  type AudioContainer,
  type Conversation,
} from '../schemas/conversations.js';
import type { StoredConversation } from '../store/conversations.js';
import type { AppContext } from './context.js';
import { recordingLink } from './recordings.js';
import type { RoutePlugin } from './types.js';

/** A conversation's `audio_url` is valid for one day. */
export const AUDIO_URL_TTL_SEC = 24 * 60 * 60;

/** The record as the API shows it: `audio_url` signed for one day, or null without a recording. */
function present(ctx: AppContext, c: StoredConversation, container: AudioContainer): Conversation {
  if (!c.recording || c.record.deletion_info?.audio_recordings_deleted_at) return c.record;
  const link = recordingLink(ctx, c.record.id, c.recording.side, container, AUDIO_URL_TTL_SEC);
  return { ...c.record, audio_url: link };
}

export const conversationRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;

  app.get(
    '/conversations/:id',
    {
      schema: {
        tags: ['conversations'],
        params: conversationIdParams,
        querystring: getConversationQuery,
        response: { 200: conversationResponse },
      },
    },
    async (req) => {
      const c = await ownedConversation(sql, req.auth.orgId, req.params.id);
      return { conversation: present(ctx, c, req.query.audio_container) };
    },
  );

  app.get(
    '/conversations',
    {
      schema: {
        tags: ['conversations'],
        querystring: listConversationsQuery,
        response: { 200: listConversationsResponse },
      },
    },
    async (req) => {
      const q = req.query;
      const page = await listProjectConversations(sql, req.auth.orgId, q);
      const records = page.conversations.map((c) => present(ctx, c, q.audio_container));
      // When `external_id` matches exactly one conversation: that conversation alone.
      if (q.external_id !== undefined && records.length === 1 && !page.prev_cursor && !page.next_cursor) {
        return { conversation: records[0]! };
      }
      return { conversations: records, pagination: { prev_cursor: page.prev_cursor, next_cursor: page.next_cursor } };
    },
  );

  app.get(
    '/conversations/:id/extractions',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: extractionsResponse } } },
    async (req) => ({ extractions: await conversationExtractions(sql, req.auth.orgId, req.params.id) }),
  );

  // Parley's addition: the extraction job of an ended conversation runs again now (its outcome in the record's
  // `post_call.jobs`, its results replacing each schema's earlier extraction).
  app.post(
    '/conversations/:id/extractions',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 202: successResponse } } },
    async (req, reply) => {
      await rerunConversationExtraction(sql, req.auth.orgId, req.params.id);
      return reply.status(202).send({ success: true });
    },
  );

  app.delete(
    '/conversations/:id',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: successResponse } } },
    async (req) => {
      await deleteConversationContent(ctx, req.auth.orgId, req.params.id);
      return { success: true };
    },
  );

  app.post(
    '/conversations/:id/cancel',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: successResponse } } },
    async (req) => {
      await cancelConversation(sql, req.auth.orgId, req.params.id);
      return { success: true };
    },
  );
};
