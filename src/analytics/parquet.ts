import fs from 'node:fs';
import path from 'node:path';
import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { EventStore } from '../ports/eventStore';
import { publicEvent } from '../audit/export';
import { workspaceOf } from '../audit/summary';

/*
 * Columnar export of the log (npm run kb -- export --format parquet) and SQL over it
 * (npm run kb -- sql). `events.parquet` has one row per event: typed envelope columns and
 * the payload as JSON; `types/<EventType>.parquet` flattens each event type's payload into
 * columns (typed by DuckDB from the data), leaving out document text and vectors.
 */

export const DEFAULT_EXPORT_DIR = 'kb-export';
/** Payload fields too big or too sensitive for the flattened tables (text, chunks, vectors). */
const HEAVY_FIELDS = new Set(['sections', 'chunks', 'vectors', 'content']);
const BATCH = 2000;
const ENVELOPE_COLUMNS = new Set(['position', 'id', 'stream', 'occurredAt', 'actorId', 'authMethod', 'workspaceId']);

export interface ParquetExportOptions {
  out: string;
  workspaceId?: string;
  onProgress?: (done: number, total: number) => void;
}

export interface ParquetExportResult {
  events: number;
  files: { file: string; rows: number; bytes: number }[];
  seconds: number;
}

const quote = (s: string): string => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

async function scalar(conn: DuckDBConnection, sql: string): Promise<unknown> {
  const r = await conn.runAndReadAll(sql);
  return r.getRowsJson()[0]?.[0];
}

export async function exportParquet(store: EventStore, options: ParquetExportOptions): Promise<ParquetExportResult> {
  const started = process.hrtime.bigint();
  const out = path.resolve(options.out);
  // Like the NDJSON export, it holds the text of documents that were not erased: owner-only.
  fs.mkdirSync(path.join(out, 'types'), { recursive: true, mode: 0o700 });
  for (const f of fs.readdirSync(path.join(out, 'types'))) if (f.endsWith('.parquet')) fs.rmSync(path.join(out, 'types', f));
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`CREATE TABLE raw (position BIGINT, id VARCHAR, type VARCHAR, stream VARCHAR, revision BIGINT, occurredAt VARCHAR,
      actorId VARCHAR, authMethod VARCHAR, workspaceId VARCHAR, correlationId VARCHAR, schemaVersion INTEGER, payload VARCHAR)`);
    const appender = await conn.createAppender('raw');
    const head = await store.headPosition();
    let position = 0;
    let events = 0;
    let next = store.readAll(0, BATCH);
    for (;;) {
      const batch = await next;
      if (batch.length === 0) break;
      position = batch[batch.length - 1].position;
      next = position >= head ? Promise.resolve([]) : store.readAll(position, BATCH);
      for (const e of batch) {
        const ws = workspaceOf(e);
        if (options.workspaceId && ws !== options.workspaceId) continue;
        const p = publicEvent(e);
        appender.appendBigInt(BigInt(p.position));
        appender.appendVarchar(p.id);
        appender.appendVarchar(p.type);
        appender.appendVarchar(p.streamId);
        appender.appendBigInt(BigInt(p.revision));
        appender.appendVarchar(p.metadata.occurredAt);
        if (p.metadata.actorId) appender.appendVarchar(p.metadata.actorId);
        else appender.appendNull();
        appender.appendVarchar(p.metadata.authMethod);
        if (ws) appender.appendVarchar(ws);
        else appender.appendNull();
        appender.appendVarchar(p.metadata.correlationId);
        appender.appendInteger(p.metadata.schemaVersion);
        appender.appendVarchar(JSON.stringify(p.data));
        appender.endRow();
        events += 1;
      }
      appender.flushSync();
      options.onProgress?.(position, head);
      if (position >= head) break;
    }
    appender.closeSync();
    options.onProgress?.(head, head);

    const files: ParquetExportResult['files'] = [];
    const write = async (select: string, file: string) => {
      const target = path.join(out, file);
      await conn.run(`COPY (${select}) TO ${quote(target)} (FORMAT parquet, COMPRESSION zstd)`);
      fs.chmodSync(target, 0o600);
      files.push({ file, rows: Number(await scalar(conn, `SELECT count(*) FROM read_parquet(${quote(target)})`)), bytes: fs.statSync(target).size });
    };
    const envelope = `position, id, type, stream, revision, CAST(occurredAt AS TIMESTAMPTZ) AS occurredAt, actorId, authMethod, workspaceId, correlationId, schemaVersion`;
    await write(`SELECT ${envelope}, CAST(payload AS JSON) AS payload FROM raw ORDER BY position`, 'events.parquet');

    const types = (await conn.runAndReadAll('SELECT DISTINCT type FROM raw ORDER BY type')).getRowsJson().map((r) => String(r[0]));
    for (const type of types) {
      if (!/^[A-Za-z][A-Za-z0-9]*$/.test(type)) continue;
      const structure = JSON.parse(String(await scalar(conn, `SELECT json_group_structure(CAST(payload AS JSON)) FROM raw WHERE type = ${quote(type)}`))) as unknown;
      if (structure === null || typeof structure !== 'object' || Array.isArray(structure)) continue;
      const fields = Object.keys(structure).filter((k) => !HEAVY_FIELDS.has(k) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
      const kept = Object.fromEntries(fields.map((k) => [k, typed((structure as Record<string, unknown>)[k])]));
      const cols = fields.map((k) => `p.${ident(k)} AS ${ident(ENVELOPE_COLUMNS.has(k) ? `data_${k}` : k)}`);
      await write(
        `SELECT position, id, stream, CAST(occurredAt AS TIMESTAMPTZ) AS occurredAt, actorId, authMethod, workspaceId${cols.length ? ', ' + cols.join(', ') : ''}
         FROM (SELECT *, json_transform(CAST(payload AS JSON), ${quote(JSON.stringify(kept))}) AS p FROM raw WHERE type = ${quote(type)}) ORDER BY position`,
        path.join('types', `${type}.parquet`),
      );
    }
    return { events, files, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** Empty arrays and nulls infer as NULL: read them as text. */
function typed(structure: unknown): unknown {
  if (structure === 'NULL') return 'VARCHAR';
  if (Array.isArray(structure)) return structure.map(typed);
  if (structure !== null && typeof structure === 'object') return Object.fromEntries(Object.entries(structure).map(([k, v]) => [k, typed(v)]));
  return structure;
}

export interface SqlResult {
  columns: string[];
  rows: unknown[][];
}

/** Run SQL over an export: views `events` and one per event type (`DocumentUploaded`, ...). */
export async function runSql(dir: string, query: string): Promise<SqlResult> {
  const root = path.resolve(dir);
  const events = path.join(root, 'events.parquet');
  if (!fs.existsSync(events)) throw new Error(`no export in ${root}: run npm run kb -- export --format parquet --out ${dir} first`);
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run("SET TimeZone = 'UTC'");
    await conn.run(`CREATE VIEW events AS SELECT * FROM read_parquet(${quote(events)})`);
    const typesDir = path.join(root, 'types');
    for (const f of fs.existsSync(typesDir) ? fs.readdirSync(typesDir) : []) {
      const m = /^([A-Za-z][A-Za-z0-9]*)\.parquet$/.exec(f);
      if (m) await conn.run(`CREATE VIEW ${ident(m[1])} AS SELECT * FROM read_parquet(${quote(path.join(typesDir, f))})`);
    }
    const r = await conn.runAndReadAll(query);
    return { columns: r.columnNames(), rows: r.getRowsJson() };
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** A plain-text table for a terminal (cells cut at 60 characters). */
export function formatTable(r: SqlResult): string {
  const text = (v: unknown) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return s.length > 60 ? `${s.slice(0, 59)}…` : s;
  };
  const cells = r.rows.map((row) => row.map(text));
  const widths = r.columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((c, i) => c.padEnd(widths[i])).join(' | ').trimEnd();
  return [line(r.columns), widths.map((w) => '-'.repeat(w)).join('-+-'), ...cells.map(line), `(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`].join('\n') + '\n';
}
