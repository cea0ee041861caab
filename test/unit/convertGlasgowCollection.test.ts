import fs from 'node:fs';
import path from 'node:path';
import { parseQrels, parseSmart } from '../../scripts/convertGlasgowCollection';

describe('Glasgow/SMART collection converter', () => {
  it('splits records into fields, joining wrapped lines and dropping CRs', () => {
    const text = '.I 1\r\n.T\r\nTwo Kinds of Power\r\nAn Essay\r\n.A\r\nWilson, P.\r\n.W\r\n  The first line.\r\nThe second.\r\n.X\r\n1\t5\t1\r\n.I 2\r\n.W\r\nOnly text.\r\n';
    const records = parseSmart(text);
    expect(records).toEqual([
      { id: '1', fields: { T: 'Two Kinds of Power An Essay', A: 'Wilson, P.', W: 'The first line. The second.', X: '1\t5\t1' } },
      { id: '2', fields: { W: 'Only text.' } },
    ]);
  });

  it('reads judgments as binary pairs, once each, skipping malformed lines', () => {
    const rels = parseQrels('     1     28\t0\t0.000000\n 1 35 0 0.0\n1 28 0 0\n\nfoo bar\n   2   7 0 0\n');
    expect(rels).toEqual([
      { queryId: '1', docId: '28', relevance: 1 },
      { queryId: '1', docId: '35', relevance: 1 },
      { queryId: '2', docId: '7', relevance: 1 },
    ]);
  });

  it('the committed CISI collection has the shape bench/eval.ts reads, every judgment pointing at a document and a query', () => {
    const dir = path.join(__dirname, '..', '..', 'eval', 'cisi');
    const read = <T>(f: string): T => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as T;
    const docs = read<{ id: number; title: string; body: string }[]>('documents.json');
    const queries = read<{ id: number; text: string }[]>('queries.json');
    const qrels = read<{ queryId: number; docId: number; relevance: number }[]>('qrels.json');
    expect(docs).toHaveLength(1460);
    expect(queries).toHaveLength(112);
    expect(docs.every((d) => d.body.length > 0 && d.body.startsWith(d.title))).toBe(true);
    expect(queries.every((q) => q.text.length > 0)).toBe(true);
    const docIds = new Set(docs.map((d) => d.id));
    const queryIds = new Set(queries.map((q) => q.id));
    expect(qrels.every((r) => docIds.has(r.docId) && queryIds.has(r.queryId) && r.relevance === 1)).toBe(true);
    expect(new Set(qrels.map((r) => r.queryId)).size).toBe(76);
  });
});
