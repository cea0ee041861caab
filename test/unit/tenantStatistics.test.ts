import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import type { IndexedChunk } from '../../src/ports/searchIndex';

/**
 * Sixth hostile look: BM25's statistics (document frequencies, row count, average length) and
 * the feedback pass's were counted over every workspace, so a tenant's scores told it whether a
 * word occurs in another tenant's documents. They are each workspace's own now: a prober's
 * document holding a word another workspace uses scores exactly as one holding a made-up word.
 */
const vector = [0.6, 0.8, 0];
const chunk = (workspaceId: string, documentId: string, content: string, chunkIndex = 0): IndexedChunk => ({
  workspaceId,
  documentId,
  documentTitle: `Notes ${documentId.slice(0, 1)}`,
  purpose: 'KNOWLEDGE',
  tags: [],
  chunkIndex,
  content,
  vector,
});

async function probe(index: EmbeddedSearchIndex): Promise<{ mode: string; guess: number; control: number }[]> {
  const out = [];
  for (const mode of ['bm25', 'hybrid'] as const) {
    const top = async (word: string) => (await index.search({ text: `${word} budget`, vector, filters: { workspaceId: 'prober' }, k: 5, mode }))[0].score;
    out.push({ mode, guess: await top('zephyrcodename'), control: await top('qwxcontrolword') });
  }
  return out;
}

describe("a workspace's scores do not depend on other workspaces' text", () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-tenant-stats-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a guessed word used only elsewhere scores as a made-up one (BM25, hybrid with feedback), live and after a reopen from the snapshot', async () => {
    const file = path.join(dir, 'index.sqlite');
    let index = new EmbeddedSearchIndex(file);
    for (let i = 0; i < 30; i++) await index.upsertDocument(`victim${i}`, [chunk('victim', `victim${i}`, `Confidential merger plan zephyrcodename number ${i} budget.`)]);
    await index.upsertDocument('guess', [chunk('prober', 'guess', 'Notes zephyrcodename here about the budget.')]);
    await index.upsertDocument('control', [chunk('prober', 'control', 'Notes qwxcontrolword here about the budget.')]);
    await index.upsertDocument('filler', [chunk('prober', 'filler', 'Unrelated memo about office plants.')]);
    for (const r of await probe(index)) expect(r.guess).toBe(r.control);
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('snapshot');
    for (const r of await probe(index)) expect(r.guess).toBe(r.control);
    // Another workspace's writes and deletions move nothing either.
    const before = await probe(index);
    for (let i = 0; i < 10; i++) await index.deleteDocument(`victim${i}`);
    await index.upsertDocument('more', [chunk('victim', 'more', 'budget budget budget zephyrcodename')]);
    expect(await probe(index)).toEqual(before);
    await index.close();
  });
});
