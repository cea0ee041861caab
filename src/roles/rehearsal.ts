import { expressServerOptions } from '../http/expressServer';
import http from 'node:http';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { EmbeddingProvider } from '../ports/embeddings';
import { buildContainer, closeContainer } from '../container';
import { spareExtractionWorkerWarm } from '../processing/extract';
import { chunkText } from '../processing/chunker';
import type { WarmUpSample } from '../adapters/embedded/searchWorkerProtocol';
import { startRole } from './startRole';

/**
 * The start-up rehearsal (KB_WARMUP_REHEARSAL, on by default on the embedded default): before
 * /readyz says ready, the server runs one small upload to VERIFIED, a document read and a search
 * through the same code (HTTP, multipart, commands, the event store, projections, the document
 * processor, the search index) in a throwaway container of its own, over a directory of its own
 * under `<KB_DATA_DIR>/tmp` that is removed afterwards. V8 compiles that code now rather than
 * during a user's first upload (which otherwise took about three times as long as the tenth).
 *
 * It touches no tenant's data and nothing of the server's state: its own log, read models,
 * keys, blobs and index, its own signing secret, no mail sent (an outbox in its directory), no
 * metrics in the server's registry. It borrows the server's embedding model (not loaded twice)
 * and takes the process's spare extraction worker, which is replaced and warmed up again before
 * this settles; its own extraction workers are ended with it.
 *
 * Its own index runs on the main thread, so the live index's worker thread (KB_SEARCH_THREAD=
 * worker, the default) would still run cold code at the first upload: it is warmed up too, on a
 * throwaway in-memory index of that thread (`WorkerSearchIndex.warmUp`): one made-up document
 * indexed, searched, renamed and deleted there. The live index, its file and checkpoint are not
 * touched; no event is appended for it.
 */

const DIR_PREFIX = 'rehearsal-';
/** Past this the rehearsal is abandoned (its container is still closed and its directory removed). */
const REHEARSAL_TIMEOUT_MS = 60_000;

const SAMPLE = [
  '# Rehearsal',
  '',
  'A short document the server uploads to itself at start-up, in a throwaway store, so that its first real upload runs warm code.',
  '',
  '## Steps',
  '',
  '- upload, extract, chunk and embed',
  '- verify, read and search',
  '',
].join('\n');

/**
 * Whether this server rehearses: the embedded default in one process with GloVe-SIF, the
 * default model. Other roles and servers skip it; so do other models: a remote one's calls are
 * billed and leave the machine, and USE-lite would make the rehearsal take seconds of CPU.
 */
export function rehearses(config: Config, embeddings: EmbeddingProvider): boolean {
  return config.warmupRehearsal && embeddings.modelId.startsWith('local:glove-sif') && config.role === 'all' && config.eventStore === 'sqlite' && config.readStore === 'sqlite' && config.searchIndex === 'embedded' && config.feed === 'none';
}

/** Directories of rehearsals cut off by a crash: removed before the next one. */
async function removeLeftovers(tmp: string): Promise<void> {
  const names = await readdir(tmp).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.startsWith(DIR_PREFIX)).map((n) => rm(path.join(tmp, n), { recursive: true, force: true })));
}

/** Runs the rehearsal; rejects (the caller logs it) when a step fails. Always cleans up after itself. */
export async function rehearseUpload(config: Config, logger: Logger, embeddings: EmbeddingProvider, warmSearchThread?: (sample: WarmUpSample) => Promise<void>): Promise<void> {
  const tmp = path.join(config.dataDir, 'tmp');
  await removeLeftovers(tmp);
  const dir = path.join(tmp, `${DIR_PREFIX}${randomUUID()}`);
  const quiet = logger.child({ rehearsal: true }, { level: 'warn' });
  const own: Config = {
    ...config,
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    jwtSecret: randomBytes(32).toString('base64url'),
    allowRegistration: true,
    rateLimits: false,
    // The index on this thread: the rehearsal starts no thread of its own.
    searchThread: 'main',
    readStoreBulkWriter: 'inline',
    mail: { ...config.mail, smtpUrl: undefined, logLinks: false },
    metrics: { ...config.metrics, port: undefined },
  };
  delete own.oidc;
  let built: Awaited<ReturnType<typeof buildContainer>> | undefined;
  let role: Awaited<ReturnType<typeof startRole>> | undefined;
  let server: http.Server | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    built = await buildContainer(own, quiet, { rehearsal: { embeddings } });
    role = await startRole(built.di);
    const s = http.createServer(expressServerOptions(role.app), role.app);
    server = s;
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const address = s.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const abort = new AbortController();
    timer = setTimeout(() => abort.abort(new Error(`the start-up rehearsal did not finish within ${REHEARSAL_TIMEOUT_MS} ms`)), REHEARSAL_TIMEOUT_MS);
    await rehearse(base, abort.signal);
    if (warmSearchThread) {
      await warmLiveSearchThread(warmSearchThread, embeddings);
      logger.info('search index thread warmed up');
    }
    // The spare extraction worker it took is replaced once that job ended: wait until the new one is warm.
    await new Promise((r) => setImmediate(r));
    await spareExtractionWorkerWarm();
  } finally {
    clearTimeout(timer);
    if (server) {
      const s = server;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    await role?.stop().catch(() => undefined);
    if (built) await closeContainer(built.di).catch((err: unknown) => logger.warn({ err }, 'the start-up rehearsal did not close cleanly'));
    await rm(dir, { recursive: true, force: true });
  }
}

const WARM_UP_QUERY = 'what does the server upload at start-up';

/** The live index's thread warmed up with a made-up document of SAMPLE's chunks and vectors of the live model. */
async function warmLiveSearchThread(warm: (sample: WarmUpSample) => Promise<void>, embeddings: EmbeddingProvider): Promise<void> {
  const workspaceId = randomUUID();
  const documentId = randomUUID();
  // Small chunks, so the made-up document has several.
  const chunks = chunkText([{ text: SAMPLE, section: 'Rehearsal' }], { chunkTokens: 24, overlapTokens: 4 });
  const texts = chunks.map((c) => c.content);
  const vectors = await (embeddings.embedDocuments ? embeddings.embedDocuments(texts) : embeddings.embed(texts));
  const [query] = await embeddings.embed([WARM_UP_QUERY]);
  await warm({
    chunks: chunks.map((c, i) => ({
      workspaceId,
      documentId,
      documentTitle: 'Rehearsal',
      purpose: 'KNOWLEDGE',
      tags: [],
      chunkIndex: c.index,
      content: c.content,
      vector: vectors[i],
      model: embeddings.modelId,
      ...(c.section ? { section: c.section } : {}),
    })),
    query: { text: WARM_UP_QUERY, vector: query, filters: { workspaceId }, k: 5, vectorModel: embeddings.modelId },
  });
}

/** The requests: a user, a workspace, an upload until VERIFIED, the document, a search. */
async function rehearse(base: string, signal: AbortSignal): Promise<void> {
  const call = async (method: string, url: string, token?: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(base + url, {
      method,
      signal,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body instanceof FormData || body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`the start-up rehearsal's ${method} ${url.replace(/[0-9a-f-]{36}/g, ':id')} answered ${res.status}: ${text.slice(0, 200)}`);
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const credentials = { email: 'rehearsal@example.com', password: randomBytes(18).toString('base64url') };
  await call('POST', '/v1/auth/register', undefined, { ...credentials, name: 'Rehearsal' });
  const token = String((await call('POST', '/v1/auth/login', undefined, credentials)).body.accessToken);
  const ws = String((await call('POST', '/v1/workspaces', token, { name: 'Rehearsal' })).body.id);
  const form = new FormData();
  form.append('file', new Blob([SAMPLE]), 'rehearsal.md');
  const doc = String((await call('POST', `/v1/workspaces/${ws}/documents`, token, form)).body.id);
  for (;;) {
    const status = (await call('GET', `/v1/workspaces/${ws}/documents/${doc}`, token)).body.processingStatus;
    if (status === 'VERIFIED') break;
    if (status === 'FAILED') throw new Error('the start-up rehearsal\'s document FAILED');
    await new Promise((r) => setTimeout(r, 5));
  }
  await call('GET', `/v1/workspaces/${ws}/documents`, token);
  await call('POST', `/v1/workspaces/${ws}/search`, token, { query: 'what does the server upload at start-up', limit: 5 });
}
