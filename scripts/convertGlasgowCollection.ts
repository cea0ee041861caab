/**
 * Converts a test collection in the Glasgow/SMART layout (X.ALL documents, X.QRY queries,
 * X.REL judgments; the layout of CISI, CACM, MED, ...) to the JSON files bench/eval.ts reads:
 * documents.json [{id, title, author, body}], queries.json [{id, text}],
 * qrels.json [{queryId, docId, relevance}].
 *
 *   node dist/scripts/convertGlasgowCollection.js --in /path/with/CISI.ALL --name CISI --out eval/cisi
 *
 * Records start with `.I <id>`; fields with `.T` (title), `.A` (author), `.W` (text),
 * `.B` (source), `.X` (citations), `.K`, `.C`, `.N` ... on their own line. The body of a
 * document is its title, a blank line and its text (as in the Cranfield fixtures). A query's
 * text is its `.T` (if any) and `.W`. A judgment line is `<queryId> <docId> ...`; CISI's are
 * binary (every listed pair is relevant), so each gets relevance 1. Queries without a
 * judgment are kept (bench/eval.ts skips them), as in the original.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface GlasgowRecord {
  id: string;
  fields: Record<string, string>;
}

/** Splits a SMART-format file into records of named fields (field text joined by single spaces). */
export function parseSmart(text: string): GlasgowRecord[] {
  const records: GlasgowRecord[] = [];
  let current: GlasgowRecord | undefined;
  let field: string | undefined;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (const line of lines) {
    const start = /^\.I\s+(\S+)\s*$/.exec(line);
    if (start) {
      current = { id: start[1], fields: {} };
      records.push(current);
      field = undefined;
      continue;
    }
    const marker = /^\.([A-Z])\s*$/.exec(line);
    if (marker && current) {
      field = marker[1];
      current.fields[field] ??= '';
      continue;
    }
    if (current && field) {
      const t = line.trim();
      if (t) current.fields[field] = current.fields[field] ? `${current.fields[field]} ${t}` : t;
    }
  }
  return records;
}

export function parseQrels(text: string): { queryId: string; docId: string; relevance: number }[] {
  const out: { queryId: string; docId: string; relevance: number }[] = [];
  const seen = new Set<string>();
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 2 || !/^\d+$/.test(parts[0]) || !/^\d+$/.test(parts[1])) continue;
    const key = `${parts[0]}/${parts[1]}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ queryId: parts[0], docId: parts[1], relevance: 1 });
  }
  return out;
}

function main(): void {
  const args = process.argv.slice(2);
  const arg = (name: string): string => {
    const i = args.indexOf(name);
    if (i < 0 || !args[i + 1]) throw new Error(`usage: convertGlasgowCollection --in DIR --name PREFIX --out DIR (missing ${name})`);
    return args[i + 1];
  };
  const inDir = arg('--in');
  const name = arg('--name');
  const outDir = arg('--out');
  const read = (ext: string): string => fs.readFileSync(path.join(inDir, `${name}.${ext}`), 'latin1');
  const docs = parseSmart(read('ALL')).map((r) => {
    const title = r.fields.T ?? '';
    const text = r.fields.W ?? '';
    return { id: Number(r.id), title, author: r.fields.A ?? '', body: title && text ? `${title}\n\n${text}` : title || text };
  });
  const queries = parseSmart(read('QRY')).map((r) => ({ id: Number(r.id), text: [r.fields.T, r.fields.W].filter(Boolean).join(' ') }));
  const docIds = new Set(docs.map((d) => String(d.id)));
  const queryIds = new Set(queries.map((q) => String(q.id)));
  const qrels = parseQrels(read('REL'))
    .filter((r) => docIds.has(r.docId) && queryIds.has(r.queryId))
    .map((r) => ({ queryId: Number(r.queryId), docId: Number(r.docId), relevance: r.relevance }));
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'documents.json'), JSON.stringify(docs, null, 1));
  fs.writeFileSync(path.join(outDir, 'queries.json'), JSON.stringify(queries, null, 1));
  fs.writeFileSync(path.join(outDir, 'qrels.json'), JSON.stringify(qrels, null, 1));
  const judged = new Set(qrels.map((r) => r.queryId)).size;
  console.log(`${docs.length} documents, ${queries.length} queries (${judged} judged), ${qrels.length} judgments → ${outDir}`);
}

if (require.main === module) main();
