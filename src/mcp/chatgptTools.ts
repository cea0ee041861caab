import { RPC, RpcError } from './protocol';
import { QUERY_MAX, QUERY_MIN } from './searchTool';
import { codePointLength, textProblem } from '../util/text';

/**
 * The `chatgpt` tool profile: the two tools ChatGPT connectors and deep research require
 * (OpenAI, "Building MCP servers for ChatGPT and API integrations"): `search` takes one query
 * string and answers `{results: [{id, title, url}]}`; `fetch` takes one id from those results
 * and answers `{id, title, text, url, metadata}`. Each answer is exactly one content item of
 * type text holding that object as JSON (and the same object as structuredContent).
 */
export const CHATGPT_SEARCH = 'search';
export const CHATGPT_FETCH = 'fetch';
/** Documents a `search` answers at most. */
export const CHATGPT_SEARCH_RESULTS = 10;

export interface ChatgptSearchResult {
  id: string;
  title: string;
  url: string;
}

export interface ChatgptDocument {
  id: string;
  title: string;
  text: string;
  url: string;
  metadata: Record<string, unknown>;
}

export function chatgptToolDefinitions(scopeNote: string) {
  return [
    {
      name: CHATGPT_SEARCH,
      description: `Search the knowledge base by meaning. Returns a list of matching documents (id, title, url), best first; pass an id to fetch to read a document whole.${scopeNote ? ` ${scopeNote}` : ''}`,
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string', minLength: QUERY_MIN, maxLength: QUERY_MAX, description: 'What to search for, in natural language.' } },
        required: ['query'],
      },
      annotations: { readOnlyHint: true },
    },
    {
      name: CHATGPT_FETCH,
      description: 'Fetch the full text of one document of the knowledge base by the id a search returned.',
      inputSchema: {
        type: 'object',
        properties: { id: { type: 'string', description: 'The id of a document, from the results of search.' } },
        required: ['id'],
      },
      annotations: { readOnlyHint: true },
    },
  ];
}

const invalid = (message: string, field: string) => new RpcError(RPC.INVALID_PARAMS, `Invalid params: ${message}`, { field });

function argumentsObject(args: unknown): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  if (typeof args !== 'object' || Array.isArray(args)) throw invalid('"arguments" must be an object.', 'arguments');
  return args as Record<string, unknown>;
}

/** `search` arguments: one query string, by the same text rules as every search. */
export function validateChatgptSearch(args: unknown): { query: string } {
  const a = argumentsObject(args);
  if (typeof a.query !== 'string') throw invalid('"query" is required and must be a string.', 'query');
  const query = a.query.trim();
  const problem = textProblem(query, 'text');
  if (problem) throw invalid(`"query" ${problem}.`, 'query');
  const length = codePointLength(query);
  if (length < QUERY_MIN || length > QUERY_MAX) throw invalid(`"query" must be ${QUERY_MIN} to ${QUERY_MAX} characters long (got ${length}).`, 'query');
  return { query };
}

/** `fetch` arguments: one id string (bounded; whether it names a document is the query's business). */
export function validateChatgptFetch(args: unknown): { id: string } {
  const a = argumentsObject(args);
  if (typeof a.id !== 'string' || a.id.trim() === '') throw invalid('"id" is required and must be a non-empty string.', 'id');
  if (a.id.length > 200) throw invalid('"id" is too long.', 'id');
  return { id: a.id.trim().toLowerCase() };
}

/** A tool answer as OpenAI documents it: one text item holding the JSON, and the same object structured. */
export function jsonToolResult(value: object) {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}
