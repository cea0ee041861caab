import { RPC, RpcError } from './protocol';
import { codePointLength, textProblem } from '../util/text';

export const TOOL_NAME = 'service_search';
export const QUERY_MIN = 2;
export const QUERY_MAX = 256;
export const LIMIT_DEFAULT = 5;
export const LIMIT_MAX = 20;

export interface ScopeTag {
  id: string;
  name: string;
}

export interface SearchArguments {
  query: string;
  limit: number;
  /** Tag ids (names resolved); undefined: the link's whole scope. */
  tags?: string[];
}

const MAX_LISTED_TAGS = 50;

/** The tool's description, generated from the link's scope so a model knows which tags it may use. */
export function toolDescription(tags: ScopeTag[], scoped: boolean): string {
  const lines = [
    'Search the knowledge base by meaning and return the most relevant passages, best first.',
    'Each result has a title, the matching passage (content) and a relevance score from 0 to 1 (0.9+ very high, 0.7-0.9 good, 0.5-0.7 moderate, below 0.5 low).',
    `Arguments: query (${QUERY_MIN}-${QUERY_MAX} characters, a natural-language question), limit (1-${LIMIT_MAX}, default ${LIMIT_DEFAULT}), tags (optional; documents having any of the given tags).`,
  ];
  const listed = tags.slice(0, MAX_LISTED_TAGS).map((t) => `"${t.name}" (id ${t.id})`);
  if (scoped) {
    lines.push(tags.length ? `This search is limited to documents tagged ${listed.join(', ')}; pass tag names or ids in tags to narrow it further.` : 'This search is limited to a set of tags.');
  } else if (tags.length) {
    lines.push(`Available tags (name or id may be passed in tags): ${listed.join(', ')}${tags.length > MAX_LISTED_TAGS ? ', ...' : ''}.`);
  }
  return lines.join(' ');
}

export function toolDefinition(tags: ScopeTag[], scoped: boolean) {
  return {
    name: TOOL_NAME,
    description: toolDescription(tags, scoped),
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: QUERY_MIN, maxLength: QUERY_MAX, description: 'What to search for, in natural language.' },
        limit: { type: 'number', minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: `How many results to return (1-${LIMIT_MAX}).` },
        tags: {
          type: 'array',
          items: { type: 'string' },
          description: tags.length ? `Only documents having any of these tags (names or ids): ${tags.slice(0, MAX_LISTED_TAGS).map((t) => t.name).join(', ')}.` : 'Only documents having any of these tags (names or ids).',
        },
      },
      required: ['query'],
    },
  };
}

const invalid = (message: string, field: string) => new RpcError(RPC.INVALID_PARAMS, `Invalid params: ${message}`, { field });

/**
 * Validate tools/call arguments against the spec's rules and the link's scope. Tag names
 * (case-insensitive) and ids are both accepted and resolved to ids.
 */
export function validateSearchArguments(args: unknown, scopeTags: ScopeTag[]): SearchArguments {
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) throw invalid('"arguments" must be an object.', 'arguments');
  const a = args as Record<string, unknown>;
  if (typeof a.query !== 'string') throw invalid('"query" is required and must be a string.', 'query');
  const query = a.query.trim();
  const problem = textProblem(query, 'text');
  if (problem) throw invalid(`"query" ${problem}.`, 'query');
  // Characters are code points, as workspace search counts them (an emoji is one).
  const length = codePointLength(query);
  if (length < QUERY_MIN || length > QUERY_MAX) throw invalid(`"query" must be ${QUERY_MIN} to ${QUERY_MAX} characters long (got ${length}).`, 'query');
  let limit = LIMIT_DEFAULT;
  if (a.limit !== undefined && a.limit !== null) {
    if (typeof a.limit !== 'number' || !Number.isInteger(a.limit) || a.limit < 1 || a.limit > LIMIT_MAX) throw invalid(`"limit" must be a whole number from 1 to ${LIMIT_MAX}.`, 'limit');
    limit = a.limit;
  }
  if (a.tags === undefined || a.tags === null) return { query, limit };
  if (!Array.isArray(a.tags) || a.tags.some((t) => typeof t !== 'string')) throw invalid('"tags" must be an array of strings.', 'tags');
  const byId = new Map(scopeTags.map((t) => [t.id, t.id]));
  const byName = new Map(scopeTags.map((t) => [t.name.toLowerCase(), t.id]));
  const ids: string[] = [];
  const refused: string[] = [];
  for (const raw of a.tags as string[]) {
    // Ids in any case, as every route takes them (ids are issued in lower case); names in any case too.
    const key = raw.trim().toLowerCase();
    const id = byId.get(key) ?? byName.get(key);
    if (id === undefined) refused.push(raw);
    else if (!ids.includes(id)) ids.push(id);
  }
  if (refused.length) throw new RpcError(RPC.INVALID_PARAMS, `Invalid params: tags not allowed by this link: ${refused.slice(0, 10).map((t) => JSON.stringify(t.slice(0, 100))).join(', ')}.`, { field: 'tags', allowedTags: scopeTags.map((t) => t.id) });
  if (ids.length === 0) return { query, limit };
  return { query, limit, tags: ids };
}
