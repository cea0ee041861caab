import fs from 'node:fs';
import path from 'node:path';
import { Incoming, PROTOCOL_VERSION, RPC, RpcError, withTimeout } from './protocol';
import { ScopeTag, SearchArguments, TOOL_NAME, toolDefinition, validateSearchArguments } from './searchTool';
import { CHATGPT_FETCH, CHATGPT_SEARCH, ChatgptDocument, ChatgptSearchResult, chatgptToolDefinitions, jsonToolResult, validateChatgptFetch, validateChatgptSearch } from './chatgptTools';

export const SERVER_NAME = 'knowledge-base-service';
export const TOOL_TIMEOUT_MS = 30_000;

/** Semver of this service, from the nearest package.json (src/ and dist/src/ both find it). */
export const SERVER_VERSION: string = (() => {
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === SERVER_NAME && pkg.version && /^\d+\.\d+\.\d+/.test(pkg.version)) return pkg.version.replace(/[-+].*$/, '');
    }
    dir = path.dirname(dir);
  }
  return '1.0.0';
})();

export interface ToolResultItem {
  title: string;
  content: string;
  score: number;
  sourceUrl?: string;
}

/** What one link's tool server needs: its scope and a search over it. */
export interface McpLinkSession {
  scopeTags(): Promise<ScopeTag[]>;
  /** True when the link is limited to allowedTags (false: the whole workspace). */
  scoped: boolean;
  search(args: SearchArguments): Promise<ToolResultItem[]>;
  /** The link's tools: `default` (service_search) or `chatgpt` (search + fetch). */
  profile?: 'default' | 'chatgpt';
  /** `chatgpt` search: matching documents, best first. */
  searchDocuments?(query: string): Promise<ChatgptSearchResult[]>;
  /** `chatgpt` fetch: one document whole, or null when the link cannot reach it. */
  fetchDocument?(id: string): Promise<ChatgptDocument | null>;
  toolTimeoutMs?: number;
}

/** tools/list and tools/call of the `chatgpt` profile. */
async function dispatchChatgpt(method: 'tools/list' | 'tools/call', p: Record<string, unknown>, session: McpLinkSession): Promise<unknown> {
  if (method === 'tools/list') {
    const tags = session.scoped ? await session.scopeTags() : [];
    const note = tags.length ? `Limited to documents tagged ${tags.slice(0, 50).map((t) => `"${t.name}"`).join(', ')}.` : '';
    return { tools: chatgptToolDefinitions(note) };
  }
  if (typeof p.name !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'Invalid params: "name" (string) is required.', { field: 'name' });
  const timeout = session.toolTimeoutMs ?? TOOL_TIMEOUT_MS;
  if (p.name === CHATGPT_SEARCH && session.searchDocuments) {
    const { query } = validateChatgptSearch(p.arguments);
    const results = await withTimeout(session.searchDocuments(query), timeout, 'the search');
    return jsonToolResult({ results });
  }
  if (p.name === CHATGPT_FETCH && session.fetchDocument) {
    const { id } = validateChatgptFetch(p.arguments);
    const doc = await withTimeout(session.fetchDocument(id), timeout, 'the fetch');
    // A tool-level failure the model can read (MCP: isError), not a protocol error.
    if (!doc) return { content: [{ type: 'text', text: `No document with id ${JSON.stringify(id.slice(0, 100))} can be fetched through this link.` }], isError: true };
    return jsonToolResult(doc);
  }
  throw new RpcError(RPC.INVALID_PARAMS, `Invalid params: unknown tool ${JSON.stringify(p.name.slice(0, 100))}; the tools are ${CHATGPT_SEARCH} and ${CHATGPT_FETCH}.`, { field: 'name' });
}

/** Answer one JSON-RPC request (notifications and responses never reach here). */
export async function dispatch(msg: Extract<Incoming, { kind: 'request' }>, session: McpLinkSession): Promise<unknown> {
  const p = msg.params;
  switch (msg.method) {
    case 'initialize':
      if (typeof p.protocolVersion !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'Invalid params: "protocolVersion" (string) is required.', { field: 'protocolVersion' });
      // Version negotiation: whatever the client asks, this server speaks PROTOCOL_VERSION.
      return { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: SERVER_NAME, version: SERVER_VERSION } };
    case 'ping':
      return {};
    case 'tools/list':
      if (session.profile === 'chatgpt') return dispatchChatgpt('tools/list', p, session);
      return { tools: [toolDefinition(await session.scopeTags(), session.scoped)] };
    case 'tools/call': {
      if (session.profile === 'chatgpt') return dispatchChatgpt('tools/call', p, session);
      if (typeof p.name !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'Invalid params: "name" (string) is required.', { field: 'name' });
      if (p.name !== TOOL_NAME) throw new RpcError(RPC.INVALID_PARAMS, `Invalid params: unknown tool ${JSON.stringify(p.name.slice(0, 100))}; the only tool is ${TOOL_NAME}.`, { field: 'name' });
      const args = validateSearchArguments(p.arguments, await session.scopeTags());
      const results = await withTimeout(session.search(args), session.toolTimeoutMs ?? TOOL_TIMEOUT_MS, 'the search');
      return { content: [{ type: 'text', text: JSON.stringify({ results, totalCount: results.length }) }] };
    }
    default:
      throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${msg.method.slice(0, 100)}.`);
  }
}
