/**
 * JSON-RPC 2.0 framing for the tool endpoint (MCP Streamable HTTP, stateless). Pure: no
 * I/O. Error codes and HTTP statuses follow the spec's section 7 table.
 */

export const PROTOCOL_VERSION = '2025-06-18';
/** Versions a client may name in MCP-Protocol-Version; the server always speaks PROTOCOL_VERSION. */
export const ACCEPTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  RATE_LIMITED: -32000,
  FORBIDDEN: -32002,
} as const;

export type RpcId = string | number | null;

/** HTTP status of each error code. -32601 has none in the spec: 200, like any other JSON-RPC answer a client should read. */
const HTTP_STATUS: Record<number, number> = {
  [RPC.PARSE_ERROR]: 400,
  [RPC.INVALID_REQUEST]: 400,
  [RPC.INVALID_PARAMS]: 400,
  [RPC.FORBIDDEN]: 403,
  [RPC.RATE_LIMITED]: 429,
  [RPC.INTERNAL_ERROR]: 500,
  [RPC.METHOD_NOT_FOUND]: 200,
};

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
    readonly httpStatus: number = HTTP_STATUS[code] ?? 400,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export type Incoming =
  | { kind: 'request'; id: string | number; method: string; params: Record<string, unknown> }
  | { kind: 'notification'; method: string; params: Record<string, unknown> }
  | { kind: 'response' };

export function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new RpcError(RPC.PARSE_ERROR, 'Parse error: the body is not valid JSON.');
  }
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** The id to answer with, when the message has a usable one. */
export function idOf(msg: unknown): RpcId {
  if (isObject(msg) && (typeof msg.id === 'string' || (typeof msg.id === 'number' && Number.isFinite(msg.id)))) return msg.id;
  return null;
}

/**
 * Classify one JSON-RPC message. A missing `params` is `{}` (real clients send ping and
 * tools/list without it); only a non-object body, a missing or wrong `jsonrpc`, a missing
 * method or a malformed id is an invalid request. Batches were removed in 2025-06-18.
 */
export function classify(msg: unknown): Incoming {
  if (Array.isArray(msg)) throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: batches are not supported; send one JSON-RPC message per request.');
  if (!isObject(msg)) throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: the body must be a JSON-RPC 2.0 object.');
  if (msg.jsonrpc !== '2.0') throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".');
  const hasId = 'id' in msg && msg.id !== undefined;
  if (hasId && idOf(msg) === null) throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: "id" must be a string or a number.');
  if (!('method' in msg) || msg.method === undefined) {
    if (hasId && ('result' in msg || 'error' in msg)) return { kind: 'response' };
    throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: "method" is required.');
  }
  if (typeof msg.method !== 'string' || msg.method === '') throw new RpcError(RPC.INVALID_REQUEST, 'Invalid request: "method" must be a non-empty string.');
  let params: Record<string, unknown> = {};
  if (msg.params !== undefined && msg.params !== null) {
    if (!isObject(msg.params)) throw new RpcError(RPC.INVALID_PARAMS, 'Invalid params: "params" must be an object.');
    params = msg.params;
  }
  if (!hasId) return { kind: 'notification', method: msg.method, params };
  return { kind: 'request', id: msg.id as string | number, method: msg.method, params };
}

export const resultMessage = (id: RpcId, result: unknown) => ({ jsonrpc: '2.0' as const, id, result });

export const errorMessage = (id: RpcId, err: RpcError) => ({
  jsonrpc: '2.0' as const,
  id,
  error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
});

/** Reject after `ms` with a -32603 that says what happened; the work itself is not cancelled. */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RpcError(RPC.INTERNAL_ERROR, `Internal error: ${what} timed out after ${Math.round(ms / 1000)} s.`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
