// Extraction schemas of a project: POST, GET /v1/extraction_schemas, GET, PATCH, DELETE
// /v1/extraction_schemas/{nameOrId}. A name conflict answers 409 in the validation shape.
import {
  createExtractionSchema,
  deleteExtractionSchema,
  getExtractionSchema,
  listExtractionSchemas,
  updateExtractionSchema,
} from '../domain/extraction-schemas.js';
import { successBody } from '../schemas/common.js';
import {
  createdExtractionSchemaBody,
  createExtractionSchemaBody,
  extractionSchemaBody,
  extractionSchemasBody,
  updateExtractionSchemaBody,
} from '../schemas/extraction-schemas.js';
import { nameOrIdParams, projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

export const extractionSchemaRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const tags = ['extraction schemas'];

  app.post(
    '/extraction_schemas',
    {
      schema: {
        tags,
        querystring: projectQuery,
        body: createExtractionSchemaBody,
        response: { 201: createdExtractionSchemaBody },
      },
    },
    async (req, reply) =>
      reply.status(201).send(await createExtractionSchema(sql, req.auth.orgId, req.query.project, req.body)),
  );

  app.get(
    '/extraction_schemas',
    { schema: { tags, querystring: projectQuery, response: { 200: extractionSchemasBody } } },
    async (req) => ({ extraction_schemas: await listExtractionSchemas(sql, req.auth.orgId, req.query.project) }),
  );

  app.get(
    '/extraction_schemas/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: extractionSchemaBody } } },
    async (req) => ({
      extraction_schema: await getExtractionSchema(sql, req.auth.orgId, req.params.nameOrId, req.query.project),
    }),
  );

  app.patch(
    '/extraction_schemas/:nameOrId',
    {
      schema: {
        tags,
        params: nameOrIdParams,
        querystring: projectQuery,
        body: updateExtractionSchemaBody,
        response: { 200: successBody },
      },
    },
    async (req) => {
      await updateExtractionSchema(ctx, req.auth.orgId, req.params.nameOrId, req.query.project, req.body);
      return { success: true };
    },
  );

  app.delete(
    '/extraction_schemas/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      await deleteExtractionSchema(ctx, req.auth.orgId, req.params.nameOrId, req.query.project);
      return { success: true };
    },
  );
};
