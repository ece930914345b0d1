// Conversations: get (spec endpoint 12), list (13), extractions (14), and Parley's delete, cancel and extraction rerun.
// API keys only: the auth hook answers 403 to session tokens (they are for the WebSocket side).
import type { Auth } from '../auth/authenticate.js';
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
import {
  cancelConversation,
  deleteConversationContent,
  getConversation,
  listConversations,
  listExtractions,
  type StoredConversation,
} from '../store/conversations.js';
import { rerunExtraction } from '../jobs/extraction.js';
import type { AppContext } from './context.js';
import { conflict, forbidden, notFound } from './errors.js';
import { resolveProject } from './lookup.js';
import { recordingLink, removeRecordingFiles } from './recordings.js';
import type { RoutePlugin } from './routes.js';

/** Spec, "Limits": a conversation's `audio_url` is valid for one day. */
export const AUDIO_URL_TTL_SEC = 24 * 60 * 60;

/** The stored conversation `id` of the caller's workspace: 404 when missing, 403 when another workspace's. */
async function owned(ctx: AppContext, auth: Auth, id: string): Promise<StoredConversation> {
  const found = await getConversation(ctx.sql, id);
  if (!found) throw notFound('conversation', id);
  if (found.orgId !== auth.orgId) throw forbidden('conversation belongs to another workspace');
  return found;
}

/** The record as the API shows it: `audio_url` signed for one day, or null without a recording. */
function present(ctx: AppContext, c: StoredConversation, container: AudioContainer): Conversation {
  if (!c.recording || c.record.deletion_info?.audio_recordings_deleted_at) return c.record;
  const link = recordingLink(ctx, c.record.id, c.recording.side, container, AUDIO_URL_TTL_SEC);
  return { ...c.record, audio_url: link };
}

export const conversationRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;

  app.get(
    '/v1/conversations/:id',
    {
      schema: {
        tags: ['conversations'],
        params: conversationIdParams,
        querystring: getConversationQuery,
        response: { 200: conversationResponse },
      },
    },
    async (req) => {
      const c = await owned(ctx, req.auth, req.params.id);
      return { conversation: present(ctx, c, req.query.audio_container) };
    },
  );

  app.get(
    '/v1/conversations',
    {
      schema: {
        tags: ['conversations'],
        querystring: listConversationsQuery,
        response: { 200: listConversationsResponse },
      },
    },
    async (req) => {
      const q = req.query;
      const project = await resolveProject(sql, req.auth.orgId, q.project);
      const page = await listConversations(sql, { ...q, projectId: project.id });
      if (page.kind === 'cursor_not_found') throw notFound('conversation', page.cursor);
      const records = page.conversations.map((c) => present(ctx, c, q.audio_container));
      // Spec 13: when `external_id` matches exactly one conversation, that conversation alone.
      if (q.external_id !== undefined && records.length === 1 && !page.prev_cursor && !page.next_cursor) {
        return { conversation: records[0] };
      }
      return { conversations: records, pagination: { prev_cursor: page.prev_cursor, next_cursor: page.next_cursor } };
    },
  );

  app.get(
    '/v1/conversations/:id/extractions',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: extractionsResponse } } },
    async (req) => {
      await owned(ctx, req.auth, req.params.id);
      return { extractions: await listExtractions(sql, req.params.id) };
    },
  );

  // Parley's addition: the extraction job of an ended conversation runs again now (its outcome in the record's
  // `post_call.jobs`, its results replacing each schema's earlier extraction).
  app.post(
    '/v1/conversations/:id/extractions',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 202: successResponse } } },
    async (req, reply) => {
      const c = await owned(ctx, req.auth, req.params.id);
      if (c.state !== 'ended') throw conflict('the conversation is in progress: extraction runs once it ends', 'conversation_in_progress');
      await rerunExtraction(sql, req.params.id);
      return reply.status(202).send({ success: true });
    },
  );

  app.delete(
    '/v1/conversations/:id',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: successResponse } } },
    async (req) => {
      await owned(ctx, req.auth, req.params.id);
      const out = await deleteConversationContent(sql, req.params.id);
      if (out.kind === 'not_found') throw notFound('conversation', req.params.id);
      if (out.kind === 'in_progress') {
        throw conflict('the conversation is in progress: cancel it first', 'conversation_in_progress');
      }
      await removeRecordingFiles(ctx, out.recordings);
      return { success: true };
    },
  );

  app.post(
    '/v1/conversations/:id/cancel',
    { schema: { tags: ['conversations'], params: conversationIdParams, response: { 200: successResponse } } },
    async (req) => {
      await owned(ctx, req.auth, req.params.id);
      const out = await cancelConversation(sql, req.params.id);
      if (out === 'not_found') throw notFound('conversation', req.params.id);
      if (out === 'already_ended') throw conflict('the conversation has already ended', 'conversation_ended');
      return { success: true };
    },
  );
};
