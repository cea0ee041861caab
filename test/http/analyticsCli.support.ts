import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { signUp, startServer } from '../support/server';
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
export async function makeHistory(): Promise<History> {
  const server = await startServer({ KB_RATE_LIMITS: 'off' });
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
    const del = await owner.api.delete(`/v1/workspaces/${wsA}/documents/${erasedDoc}`);
    if (del.status !== 204) throw new Error(`delete ${del.status}`);
    return { dataDir: server.dataDir, wsA, wsB, ownerId: owner.id, secretWord, erasedDoc, keptDoc, midpoint };
  } finally {
    await server.stop();
  }
}
