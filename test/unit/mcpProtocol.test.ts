import { classify, errorMessage, idOf, parseJson, PROTOCOL_VERSION, RPC, RpcError, withTimeout } from '../../src/mcp/protocol';
import { dispatch, McpLinkSession, SERVER_VERSION } from '../../src/mcp/server';
import { toolDefinition, validateSearchArguments } from '../../src/mcp/searchTool';

const rpcError = (fn: () => unknown): RpcError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof RpcError) return err;
    throw err;
  }
  throw new Error('expected an RpcError');
};

const tags = [
  { id: 'id-billing', name: 'Billing' },
  { id: 'id-hr', name: 'HR' },
];

describe('JSON-RPC framing', () => {
  it('parse errors are -32700 / 400', () => {
    const e = rpcError(() => parseJson('{"jsonrpc":'));
    expect([e.code, e.httpStatus]).toEqual([-32700, 400]);
  });

  it('a request without params gets params {}', () => {
    expect(classify({ jsonrpc: '2.0', id: 1, method: 'ping' })).toEqual({ kind: 'request', id: 1, method: 'ping', params: {} });
    expect(classify({ jsonrpc: '2.0', id: 'a', method: 'tools/list', params: null })).toEqual({ kind: 'request', id: 'a', method: 'tools/list', params: {} });
  });

  it('notifications and responses are recognised', () => {
    expect(classify({ jsonrpc: '2.0', method: 'notifications/initialized' }).kind).toBe('notification');
    expect(classify({ jsonrpc: '2.0', id: 3, result: {} }).kind).toBe('response');
  });

  it.each([
    ['a non-object body', 42],
    ['an array (batch)', [{ jsonrpc: '2.0', id: 1, method: 'ping' }]],
    ['a missing jsonrpc', { id: 1, method: 'ping' }],
    ['a wrong jsonrpc', { jsonrpc: '1.0', id: 1, method: 'ping' }],
    ['a missing method', { jsonrpc: '2.0', id: 1 }],
    ['a non-string method', { jsonrpc: '2.0', id: 1, method: 7 }],
    ['an object id', { jsonrpc: '2.0', id: {}, method: 'ping' }],
  ])('%s is -32600 / 400', (_name, body) => {
    const e = rpcError(() => classify(body));
    expect([e.code, e.httpStatus]).toEqual([RPC.INVALID_REQUEST, 400]);
  });

  it('non-object params are -32602', () => {
    expect(rpcError(() => classify({ jsonrpc: '2.0', id: 1, method: 'ping', params: [1] })).code).toBe(-32602);
  });

  it('maps codes to the spec statuses', () => {
    expect(new RpcError(RPC.FORBIDDEN, 'x').httpStatus).toBe(403);
    expect(new RpcError(RPC.RATE_LIMITED, 'x').httpStatus).toBe(429);
    expect(new RpcError(RPC.INTERNAL_ERROR, 'x').httpStatus).toBe(500);
    expect(new RpcError(RPC.METHOD_NOT_FOUND, 'x').httpStatus).toBe(200);
  });

  it('error bodies carry id, code, message and data', () => {
    expect(idOf({ id: 5 })).toBe(5);
    expect(idOf({ id: null })).toBeNull();
    expect(errorMessage(5, new RpcError(-32000, 'slow down', { retryAfter: 12 }))).toEqual({ jsonrpc: '2.0', id: 5, error: { code: -32000, message: 'slow down', data: { retryAfter: 12 } } });
  });

  it('withTimeout rejects with -32603 naming the time-out', async () => {
    const never = new Promise<never>(() => undefined);
    await expect(withTimeout(never, 20, 'the search')).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('timed out') });
    await expect(withTimeout(Promise.resolve(3), 1000, 'x')).resolves.toBe(3);
  });
});

describe('service_search arguments', () => {
  it('applies the default limit and trims the query', () => {
    expect(validateSearchArguments({ query: '  refunds ' }, tags)).toEqual({ query: 'refunds', limit: 5 });
  });
  it.each([
    [{}, 'query'],
    [{ query: 'a' }, 'query'],
    [{ query: 'x'.repeat(257) }, 'query'],
    [{ query: 5 }, 'query'],
    [{ query: 'ok', limit: 0 }, 'limit'],
    [{ query: 'ok', limit: 21 }, 'limit'],
    [{ query: 'ok', limit: 2.5 }, 'limit'],
    [{ query: 'ok', limit: '3' }, 'limit'],
    [{ query: 'ok', tags: 'Billing' }, 'tags'],
    [{ query: 'ok', tags: ['Marketing'] }, 'tags'],
    [[1], 'arguments'],
  ])('%j is -32602 on %s', (args, field) => {
    const e = rpcError(() => validateSearchArguments(args, tags));
    expect(e.code).toBe(-32602);
    expect(e.data?.field).toBe(field);
  });
  it('accepts the bounds', () => {
    expect(validateSearchArguments({ query: 'ab', limit: 1 }, tags).limit).toBe(1);
    expect(validateSearchArguments({ query: 'x'.repeat(256), limit: 20 }, tags).limit).toBe(20);
  });
  it('resolves tag names (any case) and ids to ids', () => {
    expect(validateSearchArguments({ query: 'ok', tags: ['billing', 'id-hr', 'Billing'] }, tags).tags).toEqual(['id-billing', 'id-hr']);
  });
  it('takes tag ids in any case, as the routes take ids', () => {
    expect(validateSearchArguments({ query: 'ok', tags: ['ID-HR', ' Id-Billing '] }, tags).tags).toEqual(['id-hr', 'id-billing']);
    expect(rpcError(() => validateSearchArguments({ query: 'ok', tags: ['ID-OTHER'] }, tags)).data?.field).toBe('tags');
  });
  it('the generated description names each allowed tag with its id', () => {
    const def = toolDefinition(tags, true);
    expect(def.name).toBe('service_search');
    expect(def.description).toContain('"Billing" (id id-billing)');
    expect(def.description).toContain('"HR" (id id-hr)');
    expect(def.inputSchema).toMatchObject({ type: 'object', required: ['query'], properties: { query: { type: 'string' }, limit: { type: 'number' }, tags: { type: 'array', items: { type: 'string' } } } });
  });
});

describe('dispatch', () => {
  const calls: unknown[] = [];
  const session: McpLinkSession = {
    scoped: true,
    scopeTags: async () => tags,
    search: async (args) => {
      calls.push(args);
      return [{ title: 'Refunds', content: 'Refunds take 5 days.', score: 0.8 }];
    },
  };
  const req = (method: string, params: Record<string, unknown> = {}) => ({ kind: 'request' as const, id: 1, method, params });

  it('initialize answers 2025-06-18 even when a newer version is asked', async () => {
    const r = await dispatch(req('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }), session);
    expect(r).toEqual({ protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: 'knowledge-base-service', version: SERVER_VERSION } });
    expect(SERVER_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
  });
  it('initialize without protocolVersion is -32602', async () => {
    await expect(dispatch(req('initialize'), session)).rejects.toMatchObject({ code: -32602 });
  });
  it('ping answers {}', async () => expect(await dispatch(req('ping'), session)).toEqual({}));
  it('tools/list lists exactly one tool', async () => {
    const r = (await dispatch(req('tools/list'), session)) as { tools: { name: string }[] };
    expect(r.tools.map((t) => t.name)).toEqual(['service_search']);
  });
  it('tools/call answers one text item holding results and totalCount', async () => {
    const r = (await dispatch(req('tools/call', { name: 'service_search', arguments: { query: 'refunds', tags: ['HR'] } }), session)) as { content: { type: string; text: string }[] };
    expect(r.content).toHaveLength(1);
    expect(r.content[0].type).toBe('text');
    expect(JSON.parse(r.content[0].text)).toEqual({ results: [{ title: 'Refunds', content: 'Refunds take 5 days.', score: 0.8 }], totalCount: 1 });
    expect(calls[calls.length - 1]).toEqual({ query: 'refunds', limit: 5, tags: ['id-hr'] });
  });
  it('an unknown tool is -32602, an unknown method -32601', async () => {
    await expect(dispatch(req('tools/call', { name: 'other', arguments: { query: 'ok' } }), session)).rejects.toMatchObject({ code: -32602 });
    await expect(dispatch(req('resources/list'), session)).rejects.toMatchObject({ code: -32601 });
  });
  it('a tool call that takes too long is -32603 with a clear message', async () => {
    const slow: McpLinkSession = { ...session, toolTimeoutMs: 30, search: () => new Promise(() => undefined) };
    await expect(dispatch(req('tools/call', { name: 'service_search', arguments: { query: 'ok' } }), slow)).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('timed out after') });
  });
});
