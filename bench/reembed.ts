/**
 * Re-embedding after an embedding model change (issue 13), on the embedded default.
 *
 *   node dist/bench/reembed.js [--docs 1000] [--chunks 10] [--switch 100000]
 *
 * A data dir (temp) whose documents were embedded with a cheap deterministic 100-d model
 * (`bench:hash-100d`) is changed to GloVe-SIF (`local:glove-sif-100d`): the re-embedder runs
 * to its end while 4 clients search the whole time. Printed: re-embedding throughput
 * (chunks/s, end to end: embedding, the log's appends with fsync, the index's staging),
 * search latency p50/p95 before and during the change, the event loop's worst delay while it
 * runs, and how long the switch itself holds the event loop (one SQL statement; the int8
 * vectors of the new model were built as they arrived) at `--switch` chunks. No target in
 * the issue: plain figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { buildContainer, closeContainer } from '../src/container';
import { loadConfig } from '../src/config/config';
import { AppContext } from '../src/app/context';
import { handleCommand, systemContext, toNewEvents } from '../src/core/commandHandler';
import { workspaceDecider } from '../src/domain/workspace/decider';
import { workspaceStream } from '../src/domain/workspace/events';
import { documentStream, DocumentEvent, encodeVector } from '../src/domain/document/events';
import { EmbeddingProvider } from '../src/ports/embeddings';
import { Reembedder } from '../src/processing/reembedder';
import { searchWorkspace } from '../queries/search/searchService';
import { EmbeddedSearchIndex } from '../src/adapters/embedded/embeddedSearchIndex';
import type { IndexedChunk } from '../src/ports/searchIndex';
import { mulberry32 as rng } from '../src/util/random';

const WORDS = 'wing lift drag flow shock wave boundary layer heat transfer nozzle jet mach pressure laminar turbulent rudder flap engine thrust fuel blade turbine compressor'.split(' ');
const OWNER = '00000000-0000-4000-8000-0000000000aa';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** A cheap deterministic "old" model: word hashes into 100 dimensions. */
function hashModel(): EmbeddingProvider {
  const dims = 100;
  return {
    modelId: 'bench:hash-100d',
    dimensions: dims,
    embed: async (texts) =>
      texts.map((t) => {
        const v = new Float32Array(dims);
        for (const w of t.split(' ')) {
          let h = 2166136261;
          for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
          v[(h >>> 0) % dims] += 1;
        }
        const n = Math.hypot(...v) || 1;
        return v.map((x) => x / n);
      }),
    close: async () => undefined,
  };
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function searchLoad(ctx: AppContext, workspaces: string[], until: () => boolean, rand: () => number): Promise<number[]> {
  const latencies: number[] = [];
  const client = async (): Promise<void> => {
    while (!until()) {
      const query = Array.from({ length: 3 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ') + ` q${Math.floor(rand() * 1e6)}`;
      const t = process.hrtime.bigint();
      await searchWorkspace(ctx, { workspaceId: workspaces[Math.floor(rand() * workspaces.length)], query, limit: 5 });
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      // A search in process may never leave the microtask queue: let timers and I/O run (as HTTP would).
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all([client(), client(), client(), client()]);
  return latencies;
}

export async function benchReembed(): Promise<void> {
  const docs = arg('docs', 1000);
  const chunksPerDoc = arg('chunks', 10);
  const switchChunks = arg('switch', 100_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-reembed-'));
  const rand = rng(13);
  const old = hashModel();
  const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_LOG_LEVEL: 'silent', KB_RATE_LIMITS: 'off' }), pino({ level: 'silent' }));
  try {
    await ctx.warmup.done;
    const glove = ctx.embeddingModels.configured;
    // The data dir as the old model left it.
    ctx.embeddingModels = { configured: old, forModel: (id) => (id === old.modelId ? old : id === glove.modelId ? glove : undefined), close: async () => undefined };
    await ctx.runner.start();
    const workspaces = Array.from({ length: 4 }, () => randomUUID());
    for (const workspaceId of workspaces) {
      await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'CreateWorkspace', workspaceId, actorId: OWNER, name: 'W', now: new Date() }, { ...systemContext(), actorId: OWNER }, { workspaceId });
    }
    for (let d = 0; d < docs; d++) {
      const documentId = randomUUID();
      const processingId = randomUUID();
      const workspaceId = workspaces[d % workspaces.length];
      const texts = Array.from({ length: chunksPerDoc }, () => Array.from({ length: 40 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' '));
      const vectors = await old.embed(texts);
      const base = { documentId, workspaceId };
      const at = new Date().toISOString();
      const events: DocumentEvent[] = [
        { type: 'DocumentUploaded', data: { ...base, blob: { sha256: 'a'.repeat(64), size: 10 }, kind: 'txt', mimeType: 'text/plain', size: 10, filename: 'd.txt', title: `Doc ${d}`, purpose: 'KNOWLEDGE', tags: [], uploadedBy: OWNER, uploadedAt: at } },
        { type: 'DocumentProcessingStarted', data: { ...base, processingId, reason: 'UPLOADED', startedAt: at } },
        { type: 'DocumentTextExtracted', data: { ...base, processingId, sections: [{ text: texts.join(' ') }], tokenCount: 40 * chunksPerDoc, sizeBytes: 10 } },
        { type: 'DocumentChunked', data: { ...base, processingId, chunks: texts.map((content, index) => ({ index, content, tokenCount: 40 })) } },
        { type: 'ChunksEmbedded', data: { ...base, processingId, modelId: old.modelId, dimensions: old.dimensions, vectors: vectors.map((v, index) => ({ index, vector: encodeVector(v) })) } },
        { type: 'DocumentVerified', data: { ...base, processingId, chunkCount: chunksPerDoc, tokenCount: 40 * chunksPerDoc, modelId: old.modelId } },
      ];
      await ctx.eventStore.append(documentStream(documentId), toNewEvents(events, systemContext(), workspaceId), 'no_stream');
    }
    await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 600_000);

    let stop = false;
    let t0 = Date.now();
    const loopBefore = monitorEventLoopDelay({ resolution: 5 });
    loopBefore.enable();
    const before = await (async () => {
      const p = searchLoad(ctx, workspaces, () => stop, rand);
      await new Promise((r) => setTimeout(r, 5000));
      stop = true;
      return p;
    })();
    loopBefore.disable();

    // The change: configured GloVe-SIF, the index on the hash model.
    ctx.embeddingModels = { configured: glove, forModel: (id) => (id === old.modelId ? old : id === glove.modelId ? glove : undefined), close: async () => undefined };
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    stop = false;
    const during = searchLoad(ctx, workspaces, () => stop, rand);
    t0 = Date.now();
    const outcome = await new Reembedder(ctx, ctx.embeddingModels, { follow: false }).runToCompletion();
    const seconds = (Date.now() - t0) / 1000;
    await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 600_000);
    stop = true;
    const duringLatencies = await during;
    loop.disable();
    const chunks = docs * chunksPerDoc;
    console.log(`  ${docs} documents × ${chunksPerDoc} chunks (${chunks}), 4 workspaces, hash-100d → ${glove.modelId}: ${outcome} in ${seconds.toFixed(1)} s`);
    console.log(`  re-embedding throughput (embed + appends with fsync + staging), 4 search clients beside it: ${Math.round(chunks / seconds)} chunks/s, ${Math.round(docs / seconds)} documents/s`);
    console.log(`  search (hybrid, new queries, 4 clients) before: p50 ${pct(before, 50).toFixed(1)} ms, p95 ${pct(before, 95).toFixed(1)} ms (${before.length} searches)`);
    console.log(`  search during the change: p50 ${pct(duringLatencies, 50).toFixed(1)} ms, p95 ${pct(duringLatencies, 95).toFixed(1)} ms (${duringLatencies.length} searches)`);
    console.log(`  event loop delay, searches alone: p99 ${(loopBefore.percentile(99) / 1e6).toFixed(1)} ms, max ${(loopBefore.max / 1e6).toFixed(1)} ms; during the change (switch included): p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`);
    console.log(`  index after the switch: ${JSON.stringify(await ctx.searchIndex.vectorModels())}`);
  } finally {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  }

  // The switch alone, on a larger index: one UPDATE over every chunk, the next int8 slab swapped in.
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-switch-')), 'search.db');
  const index = new EmbeddedSearchIndex(file);
  try {
    const unit = (dims: number): Float32Array => {
      const v = Float32Array.from({ length: dims }, () => rand() * 2 - 1);
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    const perDoc = 10;
    for (let d = 0; d < switchChunks / perDoc; d++) {
      const documentId = `d${d}`;
      const chunks: IndexedChunk[] = Array.from({ length: perDoc }, (_, i) => ({
        workspaceId: `w${d % 4}`, documentId, documentTitle: `Doc ${d}`, purpose: 'KNOWLEDGE', tags: [], chunkIndex: i,
        content: `chunk ${i} ${WORDS[d % WORDS.length]}`, vector: unit(100), model: 'A',
      }));
      await index.upsertDocument(documentId, chunks);
    }
    await index.beginVectorModel({ modelId: 'B', dimensions: 100 });
    for (let d = 0; d < switchChunks / perDoc; d++) await index.putVectors(`d${d}`, 'B', Array.from({ length: perDoc }, (_, i) => ({ chunkIndex: i, vector: unit(100) })));
    const t = process.hrtime.bigint();
    await index.switchVectorModel({ modelId: 'B', dimensions: 100 });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    console.log(`  the switch at ${switchChunks.toLocaleString('en-US')} chunks (100 dimensions): ${ms.toFixed(0)} ms holding the event loop (one UPDATE over every chunk, next vectors dropped, the int8 vectors built during the change swapped in)`);
  } finally {
    await index.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

if (require.main === module) {
  benchReembed().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
