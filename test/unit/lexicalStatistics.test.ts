import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import type { IndexedChunk, SearchHit } from '../../src/ports/searchIndex';
import { mulberry32 as rng } from '../../src/util/random';

/**
 * BM25's statistics (the number of chunks and their average length) must be those of the
 * chunks the index holds, whatever it held before: a search index rebuilt from the log (or
 * caught up after a crash) has to answer what the live one answered. FTS5's contentless-delete
 * table never takes a deleted row out of its totals (nor does `DELETE FROM` on clear), so
 * statistics read from it drift with every deletion, re-processing, retitling and rebuild.
 */
describe('BM25 statistics follow the chunks held, not the history', () => {
  const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure laminar turbulent flutter panel buckling shell'.split(' ');
  const rand = rng(17);
  const unit = (dims: number): Float32Array => {
    const v = Float32Array.from({ length: dims }, () => rand() * 2 - 1);
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  const docs = Array.from({ length: 12 }, (_, d) =>
    [0, 1, 2].map(
      (i): IndexedChunk => ({
        workspaceId: d % 3 === 0 ? 'other' : 'w',
        documentId: `d${d}`,
        documentTitle: `${words[d % words.length]} notes`,
        purpose: 'KNOWLEDGE',
        tags: [],
        chunkIndex: i,
        // Lengths vary a lot between documents, so the average length moves when one goes.
        content: Array.from({ length: 5 + ((d * 7 + i * 13) % 60) }, () => words[Math.floor(rand() * words.length)]).join(' '),
        vector: unit(8),
      }),
    ),
  );
  const queries = ['shock wave', 'boundary layer flow', 'flutter panel buckling', 'heat transfer nozzle jet', 'notes'];
  const vectors = queries.map(() => unit(8));

  async function answers(index: EmbeddedSearchIndex): Promise<Pick<SearchHit, 'documentId' | 'chunkIndex' | 'score'>[][]> {
    const out = [];
    for (const [i, text] of queries.entries()) {
      for (const mode of ['bm25', 'hybrid'] as const) {
        const hits = await index.search({ text, vector: vectors[i], filters: { workspaceId: 'w' }, k: 20, mode });
        out.push(hits.map((h) => ({ documentId: h.documentId, chunkIndex: h.chunkIndex, score: h.score })));
      }
    }
    return out;
  }

  async function fresh(chosen: IndexedChunk[][]): Promise<EmbeddedSearchIndex> {
    const index = new EmbeddedSearchIndex(':memory:');
    for (const chunks of chosen) await index.upsertDocument(chunks[0].documentId, chunks);
    return index;
  }

  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-lexstats-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('after documents are deleted: the answers of an index that never held them', async () => {
    const live = await fresh(docs);
    await live.deleteDocument('d1');
    await live.deleteDocument('d5');
    await live.deleteDocument('d6'); // of the other workspace: the statistics are the whole index's
    const expected = await fresh(docs.filter((_, d) => ![1, 5, 6].includes(d)));
    expect(await answers(live)).toEqual(await answers(expected));
    await live.close();
    await expected.close();
  });

  it('after a document is processed again (its chunks replaced) and retitled: the answers of an index that only saw the last version', async () => {
    const live = await fresh(docs);
    const redone = docs[4].map((c) => ({ ...c, content: `${c.content} ${c.content}` }));
    await live.upsertDocument('d4', redone);
    await live.updateDocumentFields('d7', { documentTitle: 'a much longer title about shock waves and panels' });
    const last = docs.map((chunks, d) => (d === 4 ? redone : d === 7 ? chunks.map((c) => ({ ...c, documentTitle: 'a much longer title about shock waves and panels' })) : chunks));
    const expected = await fresh(last);
    expect(await answers(live)).toEqual(await answers(expected));
    await live.close();
    await expected.close();
  });

  it('chunks that tie exactly (the same text in two documents) come in the same order whatever order they were indexed in', async () => {
    const same = (id: string): IndexedChunk[] => docs[2].map((c) => ({ ...c, workspaceId: 'w', documentId: id, documentTitle: 'twin notes' }));
    const live = await fresh([...docs, same('twin-a'), same('twin-b')]);
    // Processed again after a crash (the search index replays its last batch): new rows for twin-a.
    await live.upsertDocument('twin-a', same('twin-a'));
    const rebuilt = await fresh([...docs, same('twin-a'), same('twin-b')]);
    const reversed = await fresh([...docs, same('twin-b'), same('twin-a')]);
    const expected = await answers(rebuilt);
    expect(expected.flat().some((h) => h.documentId === 'twin-a')).toBe(true);
    expect(await answers(live)).toEqual(expected);
    expect(await answers(reversed)).toEqual(expected);
    for (const index of [live, rebuilt, reversed]) await index.close();
  });

  it('after clear() and the same documents again (a rebuild), and after a reopen: the answers of the first build', async () => {
    const file = path.join(dir, 'rebuild.sqlite');
    let index = new EmbeddedSearchIndex(file);
    for (const chunks of docs) await index.upsertDocument(chunks[0].documentId, chunks);
    const before = await answers(index);
    await index.clear();
    for (const chunks of docs) await index.upsertDocument(chunks[0].documentId, chunks);
    expect(await answers(index)).toEqual(before);
    await index.deleteDocument('d2');
    const afterDelete = await answers(index);
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(await answers(index)).toEqual(afterDelete);
    await index.close();
  });
});
