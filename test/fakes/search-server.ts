// A fake SearxNG-compatible search server for tests: `GET /search?q=...&format=json` answers
// `{query, results: [{url, title, content}]}` from a map of query -> results (or a fixed default), and records
// every query. Listens on 127.0.0.1, port 0.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SearchResult {
  url: string;
  title: string;
  content: string;
}

export interface FakeSearchServer {
  /** Base URL to configure as PARLEY_WEB_SEARCH_URL. */
  url: string;
  queries: string[];
  results: Map<string, SearchResult[]>;
  /** Results for a query not in `results`. */
  defaultResults: SearchResult[];
  /** When set, every search answers this HTTP status. */
  failWith: number | null;
  close(): Promise<void>;
}

export async function startFakeSearchServer(): Promise<FakeSearchServer> {
  const fake: FakeSearchServer = {
    url: '',
    queries: [],
    results: new Map(),
    defaultResults: [{ url: 'https://example.org/', title: 'Example', content: 'Nothing relevant.' }],
    failWith: null,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method !== 'GET' || url.pathname !== '/search') {
      res.writeHead(404).end();
      return;
    }
    const q = url.searchParams.get('q') ?? '';
    if (url.searchParams.get('format') !== 'json') {
      // SearxNG answers 403 for a format that is not enabled.
      res.writeHead(403).end('format not allowed');
      return;
    }
    fake.queries.push(q);
    if (fake.failWith !== null) {
      res.writeHead(fake.failWith).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ query: q, number_of_results: 0, results: fake.results.get(q) ?? fake.defaultResults }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
