/**
 * Ingest throughput (not a test: it prints, it does not assert).
 *
 *   npm run build --silent && node dist/bench/ingest.js
 *
 * 1. Chunks embedded per second with the local provider, 1 and 2 worker threads, fed the
 *    way the document processor feeds it (batches of EMBED_BATCH chunks of ~200 tokens).
 * 2. End-to-end time from upload to VERIFIED for a generated 20-page PDF through the real
 *    server (started as a child process on a temp data dir), median of a few uploads.
 * Extraction time alone is in bench/ingest-extract.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { LocalEmbeddings } from '../src/adapters/embeddings/localEmbeddings';
import { chunkText } from '../src/processing/chunker';
import { EMBED_BATCH } from '../src/processing/documentProcessor';
import { repoRoot } from '../src/util/paths';

const WORDS = (
  'the service keeps documents in workspaces and splits extracted text into chunks that are embedded ' +
  'as vectors so that semantic search returns the most similar passages with a relevance score ' +
  'retrieval augmented generation needs stable chunk boundaries page numbers and section headings'
).split(' ');

function sentence(seed: number): string {
  const n = 8 + (seed % 17);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(WORDS[(seed * 31 + i * 7) % WORDS.length]);
  const s = words.join(' ');
  return `${s[0].toUpperCase()}${s.slice(1)}.`;
}

async function embeddingThroughput(threads: number, chunks: string[]): Promise<number> {
  const provider = new LocalEmbeddings({ threads });
  try {
    await provider.warmup();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < chunks.length; i += EMBED_BATCH) await provider.embed(chunks.slice(i, i + EMBED_BATCH));
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    return chunks.length / s;
  } finally {
    await provider.close();
  }
}

async function makePdf(pages: number, firstSeed = 1): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  let seed = firstSeed;
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage([595, 842]);
    for (let line = 0; line < 45; line++) {
      page.drawText(`${p + 1}.${line + 1} ${sentence(seed++)}`.slice(0, 95), { x: 40, y: 800 - line * 17, size: 10, font });
    }
  }
  return doc.save();
}

async function startServer(dataDir: string, threads: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KB_DATA_DIR: dataDir, KB_ANNOUNCE_PORT: '1', KB_LOG_LEVEL: 'warn', KB_RATE_LIMITS: 'off', KB_EMBEDDING_THREADS: String(threads) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function json(url: string, method: string, token: string | undefined, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
}

async function uploadToVerified(threads: number, pages: number, runs: number): Promise<{ ms: number[]; chunks: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kb-bench-ingest-'));
  const server = await startServer(dir, threads);
  try {
    const email = `bench-${Date.now()}@example.com`;
    await json(`${server.url}/v1/auth/register`, 'POST', undefined, { email, password: 'correct horse battery', name: 'Bench' });
    const token = (await json(`${server.url}/v1/auth/login`, 'POST', undefined, { email, password: 'correct horse battery' })).accessToken as string;
    const ws = (await json(`${server.url}/v1/workspaces`, 'POST', token, { name: 'Bench' })).id as string;
    const ms: number[] = [];
    let chunks = 0;
    for (let i = 0; i <= runs; i++) {
      const fd = new FormData();
      // Different text each run: neither the blob store nor the embedding cache may help.
      const bytes = await makePdf(pages, 1 + (threads * 100 + i) * 10_000);
      fd.append('file', new Blob([bytes]), `bench-${i}.pdf`);
      const t0 = performance.now();
      const res = await fetch(`${server.url}/v1/workspaces/${ws}/documents`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: fd });
      const id = ((await res.json()) as { id: string }).id;
      for (;;) {
        const d = await json(`${server.url}/v1/workspaces/${ws}/documents/${id}`, 'GET', token);
        if (d.processingStatus === 'VERIFIED' || d.processingStatus === 'FAILED') {
          if (d.processingStatus === 'FAILED') throw new Error(`bench document FAILED: ${JSON.stringify(d.error)}`);
          chunks = d.chunkCount;
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      if (i > 0) ms.push(performance.now() - t0); // the first run warms the model and workers up
    }
    return { ms, chunks };
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchIngest(): Promise<void> {
  let seed = 1;
  const text = Array.from({ length: 600 }, () => Array.from({ length: 5 }, () => sentence(seed++)).join(' ')).join('\n\n');
  const chunks = chunkText([{ text }], { chunkTokens: 200, overlapTokens: 40 }).map((c) => c.content).slice(0, 512);
  console.log(`embedding: ${chunks.length} chunks of ~200 tokens, batches of ${EMBED_BATCH}, local provider (${os.cpus().length} CPUs)`);
  for (const threads of [1, 2]) {
    const rate = await embeddingThroughput(threads, chunks);
    console.log(`  ${threads} thread${threads > 1 ? 's' : ' '}: ${rate.toFixed(1)} chunks/s`);
  }
  const pdf = await makePdf(20);
  console.log(`end to end: 20-page PDF (${(pdf.length / 1024).toFixed(0)} KB), upload → VERIFIED through the real server`);
  for (const threads of [1, 2]) {
    const { ms, chunks: n } = await uploadToVerified(threads, 20, 3);
    console.log(`  KB_EMBEDDING_THREADS=${threads}: median ${median(ms).toFixed(0)} ms (runs: ${ms.map((x) => x.toFixed(0)).join(', ')} ms), ${n} chunks`);
  }
}

if (require.main === module) {
  benchIngest().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
