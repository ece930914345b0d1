// The web_search built-in's client: the JSON API of a SearxNG-compatible server (`GET {base}/search?q=...&format=json`)
// at PARLEY_WEB_SEARCH_URL. Shared by POST /v1/responses (src/responses/) and live conversations (src/conversation/).
import { z } from 'zod';

/** Results handed to the model per search. */
export const MAX_SEARCH_RESULTS = 5;
const SEARCH_TIMEOUT_MS = 10_000;
/** Characters of a result's snippet handed to the model. */
const MAX_SNIPPET_CHARS = 500;

const searxngAnswer = z.object({
  results: z.array(
    z.object({ url: z.string(), title: z.string().optional(), content: z.string().nullish() }).passthrough(),
  ),
});

export interface WebSearchHit {
  title: string;
  url: string;
  snippet: string;
}

export class WebSearchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebSearchError';
  }
}

export type WebSearch = (query: string, signal?: AbortSignal) => Promise<WebSearchHit[]>;

/** `baseUrl` is the server's root (`/search` is appended) or its search endpoint itself. */
export function createWebSearch(baseUrl: string, timeoutMs = SEARCH_TIMEOUT_MS): WebSearch {
  const endpoint = new URL(baseUrl);
  if (!endpoint.pathname.endsWith('/search')) endpoint.pathname = `${endpoint.pathname.replace(/\/+$/, '')}/search`;
  return async (query, signal) => {
    const url = new URL(endpoint);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    let body: unknown;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      if (!response.ok) throw new WebSearchError(`search answered HTTP ${response.status}`);
      body = await response.json();
    } catch (err) {
      if (err instanceof WebSearchError) throw err;
      throw new WebSearchError(`search failed: ${(err as Error).message}`, { cause: err });
    }
    const parsed = searxngAnswer.safeParse(body);
    if (!parsed.success) throw new WebSearchError('search answer is not a SearxNG JSON result list');
    return parsed.data.results.slice(0, MAX_SEARCH_RESULTS).map((r) => ({
      title: r.title ?? '',
      url: r.url,
      snippet: (r.content ?? '').slice(0, MAX_SNIPPET_CHARS),
    }));
  };
}
