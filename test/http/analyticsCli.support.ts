import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';
import { root } from '../support/cli';

export interface History {
  dataDir: string;
  wsA: string;
  wsB: string;
  ownerId: string;
  secretWord: string;
  erasedDoc: string;
  keptDoc: string;
  /** A time between the first and the second batch of events. */
  midpoint: string;
  /** A search link of A (history mode on), searched twice over HTTP (once with zero results) and once over MCP. */
  linkId: string;
  /** A time after the searches, before the erasure. */
  afterSearches: string;
  ownerToken: string;
  /** Present when asked to keep the server running. */
  server?: TestServer;
}

async function until<T>(f: () => Promise<T | null>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}

/**
 * A small real history, made over HTTP and then left with the server stopped: two
 * workspaces, two VERIFIED documents in A (one then erased), two failures in B
 * (ENCRYPTED, NO_TEXT), an instruction set with edits.
 */
export async function makeHistory(options: { keepRunning?: boolean } = {}): Promise<History> {
  const server = await startServer({ KB_RATE_LIMITS: 'off' });
  let ok = false;
  try {
    const owner = await signUp(server.url, 'Analyst');
    const wsA = (await owner.api.post('/v1/workspaces', { name: 'A' })).body.id as string;
    const keptDoc = await uploadVerified(owner.api, wsA, 'kept.txt', 'Notes about lighthouses and the tides of the northern bay.');
    const midpoint = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const wsB = (await owner.api.post('/v1/workspaces', { name: 'B' })).body.id as string;
    const secretWord = `zorblax${randomBytes(5).toString('hex')}`;
    const erasedDoc = await uploadVerified(owner.api, wsA, 'secret.txt', `The harbour code is ${secretWord}. Boats leave at dusk.`);
    for (const f of ['encrypted.pdf', 'empty.txt']) {
      const fd = new FormData();
      fd.append('file', new Blob([fs.readFileSync(path.join(root, 'test/fixtures', f))]), f);
      const up = await owner.api.post(`/v1/workspaces/${wsB}/documents`, fd);
      if (up.status !== 201) throw new Error(`upload ${f}: ${up.status} ${up.text}`);
      await until(async () => ((await owner.api.get(`/v1/workspaces/${wsB}/documents/${up.body.id}`)).body.processingStatus === 'FAILED' ? true : null));
    }
    const set = await owner.api.post(`/api/workspaces/${wsA}/instruction-sets`, { name: 'Guide' });
    if (set.status !== 201) throw new Error(`set ${set.status} ${set.text}`);
    await owner.api.patch(`/api/instruction-sets/${set.body.id}`, { name: 'Guide 2' });
    // Searches: a link (history mode on) over HTTP twice (the second filtered to a tag no document has: zero results), over MCP once; the workspace search once.
    const emptyTag = (await owner.api.post(`/v1/workspaces/${wsA}/tags`, { name: 'Empty', color: '#112233' })).body.id as string;
    const link = (await owner.api.post(`/api/workspaces/${wsA}/public-links`, { name: 'Docs link', historyMode: true })).body as { id: string; token: string };
    if (!link.token) throw new Error('link not created');
    const anon = client(server.url);
    const s1 = await anon.get(`/public/${link.token}/search?q=lighthouses`);
    const s2 = await anon.get(`/public/${link.token}/search?q=lighthouses&tags=${emptyTag}`);
    if (s1.status !== 200 || s1.body.totalResults < 1 || s2.status !== 200 || s2.body.totalResults !== 0) throw new Error(`link search ${s1.status} ${s1.text} ${s2.text}`);
    const mcp = await fetch(`${server.url}/mcp/${link.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service_search', arguments: { query: 'tides of the bay' } } }),
    });
    if (mcp.status !== 200) throw new Error(`mcp ${mcp.status}`);
    const ws = await owner.api.post(`/v1/workspaces/${wsA}/search`, { query: 'harbour code' });
    if (ws.status !== 200) throw new Error(`search ${ws.status}`);
    await new Promise((r) => setTimeout(r, 20));
    const afterSearches = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const del = await owner.api.delete(`/v1/workspaces/${wsA}/documents/${erasedDoc}`);
    if (del.status !== 204) throw new Error(`delete ${del.status}`);
    ok = true;
    return {
      dataDir: server.dataDir,
      wsA,
      wsB,
      ownerId: owner.id,
      ownerToken: owner.token,
      secretWord,
      erasedDoc,
      keptDoc,
      midpoint,
      linkId: link.id,
      afterSearches,
      ...(options.keepRunning ? { server } : {}),
    };
  } finally {
    if (!ok || !options.keepRunning) await server.stop();
  }
}
