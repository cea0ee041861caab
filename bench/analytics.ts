/**
 * Analytics benchmarks (`npm run bench -- analytics [--events N]`): generate a log of N
 * events (default 1,000,000: workspaces, documents with processing runs, searches, set
 * edits), then measure the Parquet export (time, file sizes), the README's SQL queries over
 * it, an ad-hoc projection in the sandbox, and the cost a search pays to record its event.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NewEvent } from '../src/domain/event';
import { loadConfig } from '../src/config/config';
import { createLogger } from '../src/app/logger';
import { buildContainer, closeContainer } from '../src/container';
import { exportParquet, runSql } from '../src/analytics/parquet';
import { runProjection } from '../src/analytics/projectRunner';
import { recordSearch, searchEventsInFlight } from '../commands/search/recordSearch';
import { repoRoot } from '../src/util/paths';

function eventsArg(): number {
  const i = process.argv.indexOf('--events');
  const v = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.KB_BENCH_ANALYTICS_EVENTS ?? 1_000_000);
  if (!Number.isInteger(v) || v < 1000) throw new Error('--events must be an integer ≥ 1000');
  return v;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function readmeQueries(): { title: string; sql: string }[] {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const section = readme.split('<!-- analytics-queries -->')[1] ?? '';
  return [...section.matchAll(/```sql\n-- (.+)\n([\s\S]*?)```/g)].map((m) => ({ title: m[1], sql: m[2].trim() }));
}

export async function benchAnalytics(): Promise<void> {
  const total = eventsArg();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-analytics-'));
  // Generation only: KB_DURABILITY=normal (no fsync per commit) so a million events fit in the time box.
  const config = loadConfig({ ...process.env, KB_DATA_DIR: path.join(dir, 'data'), KB_DURABILITY: 'normal' });
  const { ctx, di } = await buildContainer(config, createLogger('silent'));
  try {
    // 1. Generate: per workspace 1 creation; per document 3 events (upload, start, verified | failed); searches; set edits.
    const t0 = Date.now();
    const start = Date.parse('2026-01-05T00:00:00Z');
    const span = 180 * 24 * 3600_000;
    let t = 0;
    const meta = (workspaceId: string, actorId: string | null) => ({
      actorId,
      authMethod: actorId ? ('session' as const) : ('public_token' as const),
      correlationId: randomUUID(),
      occurredAt: new Date(start + Math.floor((t++ / total) * span)).toISOString(),
      schemaVersion: 1,
      workspaceId,
    });
    const ev = (type: string, data: Record<string, unknown>, m: NewEvent['metadata']): NewEvent => ({ id: randomUUID(), type, data, metadata: m });
    const workspaces = Array.from({ length: 100 }, () => ({ id: randomUUID(), owner: randomUUID(), links: [randomUUID(), randomUUID()], docs: [] as string[] }));
    const pending: Promise<unknown>[] = [];
    const push = async (stream: string, events: NewEvent[]) => {
      pending.push(ctx.eventStore.append(stream, events, 'no_stream'));
      if (pending.length >= 256) await Promise.all(pending.splice(0));
    };
    let written = 0;
    for (const w of workspaces) {
      await push(`workspace-${w.id}`, [ev('WorkspaceCreated', { workspaceId: w.id, name: 'w', ownerId: w.owner, createdAt: '', settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' } }, meta(w.id, w.owner))]);
      written += 1;
    }
    const codes = ['NO_TEXT', 'CORRUPT', 'ENCRYPTED', 'TIMEOUT'];
    let documents = 0;
    while (written < total) {
      const w = workspaces[written % workspaces.length];
      const r = written % 10;
      if (r < 3) {
        // A document: upload, processing started, verified (or failed, 1 in 10).
        const documentId = randomUUID();
        const processingId = randomUUID();
        w.docs.push(documentId);
        const base = { documentId, workspaceId: w.id };
        documents += 1;
        const failed = documents % 10 === 0;
        await push(`document-${documentId}`, [
          ev('DocumentUploaded', { ...base, blob: { sha256: 'x', size: 1000 }, kind: 'txt', mimeType: 'text/plain', size: 1000, filename: 'f.txt', title: `Doc ${written}`, purpose: 'KNOWLEDGE', tags: [], uploadedBy: w.owner, uploadedAt: '' }, meta(w.id, w.owner)),
          ev('DocumentProcessingStarted', { ...base, processingId, reason: 'UPLOADED', startedAt: '' }, meta(w.id, w.owner)),
          failed
            ? ev('DocumentProcessingFailed', { ...base, processingId, code: codes[(documents / 10) % codes.length], message: 'bench' }, meta(w.id, null))
            : ev('DocumentVerified', { ...base, processingId, chunkCount: 5, tokenCount: 900 }, meta(w.id, null)),
        ]);
        written += 3;
      } else if (r === 9) {
        const setId = randomUUID();
        await push(`instructionset-${setId}`, [
          ev('InstructionSetCreated', { setId, workspaceId: w.id, name: 's', description: null, isPublic: false, createdAt: '' }, meta(w.id, w.owner)),
          ev('InstructionSetUpdated', { setId, workspaceId: w.id, name: 's2', updatedAt: '' }, meta(w.id, w.owner)),
        ]);
        written += 2;
      } else {
        const searchId = randomUUID();
        const channel = written % 3 === 0 ? 'workspace' : written % 3 === 1 ? 'link' : 'tool';
        const hits = written % 17 === 0 ? [] : w.docs.slice(-3);
        await push(`search-${searchId}`, [
          ev('SearchPerformed', { searchId, workspaceId: w.id, channel, linkId: channel === 'workspace' ? null : w.links[written % 2], latencyMs: 2 + (written % 40), resultCount: hits.length, hitDocumentIds: hits }, meta(w.id, channel === 'workspace' ? w.owner : null)),
        ]);
        written += 1;
      }
    }
    await Promise.all(pending);
    const head = await ctx.eventStore.headPosition();
    const genSeconds = (Date.now() - t0) / 1000;
    console.log(`  generated ${head.toLocaleString('en')} events in ${genSeconds.toFixed(1)} s; events.db ${mb(fs.statSync(path.join(dir, 'data', 'events.db')).size)}`);

    // 2. Parquet export.
    const out = path.join(dir, 'export');
    const rssBefore = process.memoryUsage().rss;
    const r = await exportParquet(ctx.eventStore, { out });
    const main = r.files.find((f) => f.file === 'events.parquet')!;
    const typed = r.files.filter((f) => f !== main).reduce((n, f) => n + f.bytes, 0);
    console.log(
      `  export --format parquet: ${r.events.toLocaleString('en')} events in ${r.seconds.toFixed(1)} s = ${Math.round(r.events / r.seconds).toLocaleString('en')} events/s; events.parquet ${mb(main.bytes)}, ${r.files.length - 1} per-type files ${mb(typed)}; RSS +${mb(process.memoryUsage().rss - rssBefore)}`,
    );

    // 3. The README's queries.
    for (const q of readmeQueries()) {
      const s = process.hrtime.bigint();
      const res = await runSql(out, q.sql);
      console.log(`  sql "${q.title}": ${res.rows.length} rows in ${(Number(process.hrtime.bigint() - s) / 1e6).toFixed(0)} ms`);
    }

    // 4. An ad-hoc projection over the whole log, in the sandbox.
    const p = await runProjection(ctx.eventStore, { file: path.join(repoRoot, 'examples/failuresByCode.ts'), protectedPaths: [config.dataDir] });
    console.log(`  project examples/failuresByCode.ts: ${p.scanned.toLocaleString('en')} events in ${p.seconds.toFixed(1)} s = ${Math.round(p.scanned / p.seconds).toLocaleString('en')} events/s`);
  } finally {
    await closeContainer(di);
  }

  // 5. What a search pays to record its event (durability full, as served): the synchronous
  //    part of recordSearch, which is all the search waits for, and how fast the appends drain.
  const sdir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-search-events-'));
  const full = await buildContainer(loadConfig({ ...process.env, KB_DATA_DIR: sdir }), createLogger('silent'));
  try {
    const n = 5000;
    const costs: number[] = [];
    const ws = randomUUID();
    const started = Date.now();
    for (let i = 0; i < n; i++) {
      const s = process.hrtime.bigint();
      recordSearch(full.ctx, { workspaceId: ws, channel: 'workspace', linkId: null, actorId: 'u', authMethod: 'session', correlationId: randomUUID(), latencyMs: 5, hitDocumentIds: [randomUUID(), randomUUID()] });
      costs.push(Number(process.hrtime.bigint() - s) / 1e6);
      // Searches arrive spread out, not all in one tick: yield like a server between requests.
      if (i % 50 === 49) await new Promise((res) => setImmediate(res));
    }
    while (searchEventsInFlight() > 0) await new Promise((res) => setTimeout(res, 5));
    costs.sort((a, b) => a - b);
    const pct = (q: number) => costs[Math.min(costs.length - 1, Math.floor(q * costs.length))].toFixed(3);
    console.log(
      `  search event (KB_DURABILITY=full): added latency per search p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms (not awaited); ${n} events durable in ${((Date.now() - started) / 1000).toFixed(2)} s`,
    );
  } finally {
    await closeContainer(full.di);
    fs.rmSync(sdir, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
