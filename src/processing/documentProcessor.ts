import { LAZY_CHECKPOINT_EVENTS } from '../core/consumer';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { unlink, writeFile, mkdir } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { AppContext } from '../app/context';
import { CommandContext, fold, handleCommand, systemContext } from '../core/commandHandler';
import { RecordedEvent } from '../domain/event';
import { DomainError } from '../domain/errors';
import { DocumentCommand, documentDecider, DocumentState } from '../domain/document/decider';
import { vectorBatches } from '../domain/document/eventParts';
import { EVENT_PAYLOAD_BUDGET } from '../domain/eventSize';
import { ChunkData, DocumentEvent, documentStream, encodeVector, ExtractedSectionData, ProcessingFailureCode } from '../domain/document/events';
import { Subscription } from '../ports/eventStore';
import { KeyStore } from '../ports/keyStore';
import { Job, JobConsumer, JobQueue, PoisonMessageError } from '../ports/jobQueue';
import { PROCESS_DOCUMENT_JOB } from './processDocumentJob';
import { closeIdleExtractionWorkers, EventPartsOptions, ExtractedText, ExtractionError, extractText, keepSpareExtractionWorker } from './extract';
import type { ChunkOptions } from './chunker';
import { FairScheduler, SchedulerClosedError } from './fairScheduler';
import { activeEmbedder } from '../search/vectorModels';

export const PROCESSOR_CHECKPOINT = 'document-processor';
/** At most this many chunks per DocumentChunked event (fewer when they pass the event budget), and per embedding call (its vectors go in ChunksEmbedded events under the budget). */
export const CHUNK_EVENT_BATCH = 256;
/** How the extraction worker cuts text and chunks into the events' payloads. */
const EVENT_PARTS: EventPartsOptions = { budget: EVENT_PAYLOAD_BUDGET, maxChunks: CHUNK_EVENT_BATCH };
export const EMBED_BATCH = 64;

/** The run was superseded (new content, reprocess, delete) or the service is stopping. */
class RunAbandoned extends Error {}

/** Following the log, at most this many runs wait in memory; the subscription waits beyond. */
const MAX_WAITING_RUNS = 1000;

/** How a call of `process` ended. */
export type ProcessOutcome = 'finished' | 'skipped' | 'resumed' | 'superseded' | 'interrupted';

/** A document's text and chunks as the payloads of their events (from the extraction worker). */
interface EventReadyText {
  textParts: ExtractedSectionData[][];
  chunkBatches: ChunkData[][];
  tokenCount: number;
  sizeBytes: number;
}

interface Run {
  documentId: string;
  state: DocumentState;
  ctx: CommandContext;
}

/**
 * The document processor: a process manager driven by the event log. Each
 * DocumentProcessingStarted (appended together with DocumentUploaded, DocumentContentUpdated
 * or DocumentReprocessRequested) starts a run: extract, normalise and chunk (in a worker
 * thread, with a time-out: extract.ts) → embed in batches → DocumentVerified, or
 * DocumentProcessingFailed.
 *
 * Fair across workspaces: runs go through a FairScheduler (KB_PROCESSING_CONCURRENCY runs
 * at once, at most KB_PROCESSING_PER_WORKSPACE of one workspace, waiting runs taken
 * round-robin by workspace), so one workspace's large documents cannot keep another's small
 * one waiting; memory stays bounded by that many documents. A newer run of a document stops
 * the extraction of the older one at once instead of letting it finish for nothing.
 * Crash-safe: the checkpoint (`document-processor` in the read store) moves past a
 * ProcessingStarted only once that run and every earlier one has its outcome appended; after
 * a crash the event is delivered again and, when the run had already appended some events,
 * it restarts as a fresh run (new processingId, reason RESUMED, scheduled as its own run) so
 * no run ever holds duplicated pipeline events.
 *
 * Two ways to be driven (the composition root decides):
 * - follow the log (embedded default, KB_FEED=none): as above, one processor per deployment;
 * - a job queue (KB_FEED=kafka): the projector's dispatcher enqueues one `process-document`
 *   job per run, and the workers of one consumer group share them, so each run is processed
 *   once however many workers there are. A job for a run that is no longer current or is
 *   finished is skipped; a job that finds its run half done (a worker died) turns it into a
 *   fresh RESUMED run, which gets its own job, instead of continuing it in place (two
 *   workers never race on one run). A job interrupted by a stop is not acknowledged, so it
 *   is delivered again.
 */
export class DocumentProcessor {
  readonly name = 'document-processor';
  private sub: Subscription | undefined;
  private consumer: JobConsumer | undefined;
  private stopping = false;
  private scheduler: FairScheduler | undefined;
  /** Log position up to which every event was handed over (following the log). */
  private seenUpTo = 0;
  private savedCheckpoint = 0;
  /** Positions of the ProcessingStarted events whose runs are waiting or running. */
  private readonly unfinished = new Set<number>();
  private readonly runFinishedWaiters = new Set<() => void>();
  private checkpointWrite: Promise<void> = Promise.resolve();
  /** The run in progress per document, to stop it when a newer one starts. */
  private readonly activeRuns = new Map<string, { processingId: string; abort: AbortController }>();
  /** Without the spare: the workspaces whose files this processor extracted (their idle workers are ended at its stop). */
  private readonly isolationKeys = new Set<string>();

  constructor(
    private readonly app: AppContext,
    private readonly options: {
      extractTimeoutMs?: number;
      jobQueue?: JobQueue;
      /** The data keys that seal document text in the log (none when the store does not encrypt): a run's key is made while its file is extracted. */
      keyStore?: KeyStore | null;
      /**
       * Whether this processor keeps the process's spare extraction worker (default true). The
       * start-up rehearsal's processor (src/roles/rehearsal.ts) does not: it neither starts nor
       * stops the spare, and at its stop ends only the workers of its own workspaces.
       */
      keepsSpareWorker?: boolean;
    } = {},
  ) {}

  /** The queue this processor takes its runs from; none when it follows the log. */
  private get jobQueue(): JobQueue | undefined {
    return this.options.jobQueue;
  }

  async start(): Promise<void> {
    this.stopping = false;
    // A workspace's first document neither waits for an extraction worker to start nor is the
    // first to run its code, nor that of the document embedding thread: both are warmed up now,
    // in the background, and /readyz says `warming` until they are.
    const { timeoutMs: _timeoutMs, ...limits } = this.app.config.extraction;
    const spareWarm = this.keepsSpare ? keepSpareExtractionWorker({ warmUp: { limits, chunking: this.chunking(), eventParts: EVENT_PARTS } }) : Promise.resolve();
    const embedder = this.app.embeddingModels.configured;
    this.app.warmup.add('document processing', async () => {
      // Neither part is needed to process documents (a job starts its own worker; batches are
      // embedded on the calling thread until the thread is up): a failure here is only logged.
      const documents = embedder.warmup?.({ documents: true }).catch((err: unknown) => this.app.logger.warn({ err }, 'document embedding warm-up failed; the first documents wait for the model'));
      await Promise.all([spareWarm, documents]);
    });
    const queue = this.jobQueue;
    if (queue) {
      const { concurrency, perWorkspace } = this.app.config.processing;
      this.consumer = await queue.consume((job) => this.handleJob(job), {
        // Jobs carry their workspace as `group`: the queue serves groups fairly (see JobQueue).
        concurrency,
        maxPerGroup: perWorkspace,
        onDeadLetter: (job, err) => this.app.logger.error({ err, jobId: job.id, payload: job.payload }, 'document processing job dead-lettered'),
      });
      return;
    }
    const from = await this.app.readStore.getCheckpoint(PROCESSOR_CHECKPOINT);
    this.seenUpTo = from;
    this.savedCheckpoint = from;
    this.unfinished.clear();
    this.scheduler = new FairScheduler({ concurrency: this.app.config.processing.concurrency, perGroup: this.app.config.processing.perWorkspace });
    this.sub = this.app.eventStore.subscribe(
      from,
      (events) => this.handleBatch(events),
      (err) => this.app.logger.error({ err }, 'document processor failed; retrying'),
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer) await Promise.race([consumer.stop(), new Promise((r) => setTimeout(r, 3000).unref())]);
    const sub = this.sub;
    this.sub = undefined;
    const scheduler = this.scheduler;
    this.scheduler = undefined;
    // Waiting runs are dropped, runs in flight stopped at once (their extraction worker too):
    // none is checkpointed, so all are delivered again after the restart.
    scheduler?.close();
    for (const r of this.activeRuns.values()) r.abort.abort(new RunAbandoned('stopping'));
    await closeIdleExtractionWorkers(this.keepsSpare ? undefined : this.isolationKeys);
    for (const w of [...this.runFinishedWaiters]) w();
    if (!sub) return;
    await Promise.race([Promise.all([sub.stop(), scheduler?.idle()]), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  private get keepsSpare(): boolean {
    return this.options.keepsSpareWorker !== false;
  }

  /** Hands each new run to the scheduler without waiting for it, so later runs (other workspaces) are seen at once. */
  private async handleBatch(events: RecordedEvent[]): Promise<void> {
    let runs = 0;
    for (const e of events) {
      if (this.stopping) throw new RunAbandoned('stopping');
      if (e.position <= this.seenUpTo) continue;
      if (e.type === 'DocumentProcessingStarted') {
        this.schedule(e);
        runs++;
      }
      this.seenUpTo = e.position;
      while (this.unfinished.size >= MAX_WAITING_RUNS && !this.stopping) {
        await new Promise<void>((resolve) => this.runFinishedWaiters.add(resolve));
      }
    }
    // A batch of other events moves the stored checkpoint only once it lags far behind (as
    // checkpointedConsumer does): a restart meanwhile reads them again and starts nothing.
    if (runs > 0 || this.seenUpTo - this.savedCheckpoint >= LAZY_CHECKPOINT_EVENTS) await this.saveCheckpoint();
  }

  private schedule(e: RecordedEvent): void {
    const scheduler = this.scheduler;
    if (!scheduler) return;
    const data = e.data as { documentId: string; processingId: string; workspaceId?: string };
    const workspaceId = data.workspaceId ?? e.metadata.workspaceId ?? '';
    // A newer run supersedes the one in progress (its appends would be refused anyway).
    const active = this.activeRuns.get(data.documentId);
    if (active && active.processingId !== data.processingId) active.abort.abort(new RunAbandoned('run superseded'));
    this.unfinished.add(e.position);
    scheduler.submit(workspaceId, () => this.processRetrying(data.documentId, data.processingId)).then(
      (outcome) => {
        if (outcome === 'interrupted') return; // not checkpointed: delivered again after the restart
        this.unfinished.delete(e.position);
        for (const w of [...this.runFinishedWaiters]) w();
        this.runFinishedWaiters.clear();
        void this.saveCheckpoint();
      },
      (err: unknown) => {
        if (!(err instanceof SchedulerClosedError)) this.app.logger.error({ err, documentId: data.documentId }, 'document processing run failed');
      },
    );
  }

  /** A run, retried with backoff while the stores fail (as the subscription used to retry its batch). */
  private async processRetrying(documentId: string, processingId: string): Promise<ProcessOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.process(documentId, processingId, { resumeInPlace: false });
      } catch (err) {
        if (this.stopping) return 'interrupted';
        this.app.logger.error({ err, documentId, attempt }, 'document processor failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** (attempt - 1))));
      }
    }
  }

  /** The checkpoint moves to just before the oldest unfinished run, or to everything seen. */
  private saveCheckpoint(): Promise<void> {
    this.checkpointWrite = this.checkpointWrite
      .then(async () => {
        if (this.stopping) return;
        let target = this.seenUpTo;
        for (const p of this.unfinished) target = Math.min(target, p - 1);
        if (target <= this.savedCheckpoint) return;
        await this.app.readStore.setCheckpoint(PROCESSOR_CHECKPOINT, target);
        this.savedCheckpoint = target;
      })
      .catch((err: unknown) => this.app.logger.warn({ err }, 'document processor checkpoint not saved; it is saved with the next run'));
    return this.checkpointWrite;
  }

  /** A job from the queue: process its run; throw (job redelivered) when interrupted by a stop. */
  async handleJob(job: Job): Promise<void> {
    if (job.type !== PROCESS_DOCUMENT_JOB) throw new PoisonMessageError(`unknown job type ${job.type}`);
    const { documentId, processingId } = job.payload;
    if (typeof documentId !== 'string' || typeof processingId !== 'string') throw new PoisonMessageError('process-document job without documentId/processingId');
    const outcome = await this.process(documentId, processingId, { resumeInPlace: false });
    if (outcome === 'interrupted') throw new Error('processor stopping: job left for redelivery');
  }

  /**
   * Runs the processing of one document for the run `processingId`, if it is still the
   * current one. A run found half done restarts as a fresh RESUMED run: continued here when
   * `resumeInPlace`, else left to that run's own ProcessingStarted (its own job, or its own
   * turn in the scheduler when following the log).
   */
  async process(documentId: string, processingId: string, options: { resumeInPlace?: boolean } = {}): Promise<ProcessOutcome> {
    const streamId = documentStream(documentId);
    const events = await this.app.eventStore.readStream(streamId);
    if (events.length === 0) return 'skipped';
    const state = fold(documentDecider, events);
    if (state.status !== 'active' || state.processingStatus !== 'PROCESSING' || state.run.processingId !== processingId) return 'skipped';
    const workspace = await this.app.readStore.collection('workspaces').get(state.workspaceId);
    if (!workspace) return 'skipped'; // the workspace was deleted with its documents
    // The document's data key (made on first use: a write with its syncs, 10-50 ms) is made
    // while the text is extracted rather than when the text is appended. Never recreated once
    // destroyed; the append waits for this same look-up, or makes its own if this one failed.
    this.options.keyStore?.getOrCreate(documentId).catch(() => undefined);
    const run: Run = { documentId, state, ctx: systemContext(this.app.now()) };
    let id = processingId;
    const started = Date.now();
    const active = { processingId, abort: new AbortController() };
    const previous = this.activeRuns.get(documentId);
    if (previous && previous.processingId !== processingId) previous.abort.abort(new RunAbandoned('run superseded'));
    this.activeRuns.set(documentId, active);
    try {
      if ((state.run.textParts ?? 0) > 0 || state.run.chunks > 0) {
        id = randomUUID();
        await this.append(run, { type: 'ResumeProcessing', processingId, newProcessingId: id, now: this.app.now() });
        if (options.resumeInPlace === false) return 'resumed';
        active.processingId = id;
      }
      await this.pipeline(run, id, events, active.abort.signal);
      this.app.logger.info({ documentId, processingId: id, ms: Date.now() - started, status: run.state.processingStatus }, 'document processed');
      return 'finished';
    } catch (err) {
      if (err instanceof RunAbandoned) return this.stopping ? 'interrupted' : 'superseded';
      if (this.stopping) return 'interrupted'; // stores may be closing: the run resumes after the restart
      const failure = toFailure(err);
      // An expected outcome (no text, corrupt, over a limit) is logged by its reason; only an unexpected error carries its stack.
      this.app.logger.warn({ ...(failure.code === 'PROCESSING_ERROR' ? { err } : { reason: failure.message }), documentId, processingId: id, code: failure.code }, 'document processing failed');
      try {
        await this.append(run, { type: 'MarkFailed', processingId: id, code: failure.code, message: failure.message });
      } catch (inner) {
        if (!(inner instanceof RunAbandoned)) throw inner;
        return this.stopping ? 'interrupted' : 'superseded';
      }
      return 'finished';
    } finally {
      if (this.activeRuns.get(documentId) === active) this.activeRuns.delete(documentId);
    }
  }

  private async pipeline(run: Run, processingId: string, events: RecordedEvent[], signal: AbortSignal): Promise<void> {
    const extractStarted = process.hrtime.bigint();
    const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;
    let extracted: EventReadyText;
    try {
      extracted = await this.extract(run.state, events, signal);
      this.app.metrics.extraction({ kind: run.state.kind, outcome: 'ok', seconds: seconds(extractStarted) });
    } catch (err) {
      this.app.metrics.extraction({ kind: run.state.kind, outcome: 'error', seconds: seconds(extractStarted) });
      throw err;
    }
    // Events stay under MAX_EVENT_BYTES: a large text goes in several parts, chunks in
    // batches (see eventParts), cut so by the extraction worker as it read the text.
    const { textParts: parts, chunkBatches: batches, tokenCount, sizeBytes } = extracted;
    if (parts.length === 0) throw new ExtractionError('NO_TEXT', 'The document contains no extractable text.');
    for (let part = 0; part < parts.length; part++) {
      const partOf = parts.length > 1 ? { part, parts: parts.length } : {};
      await this.append(run, { type: 'RecordTextExtracted', processingId, sections: parts[part], tokenCount, sizeBytes, ...partOf });
    }

    if (batches.length === 0) throw new ExtractionError('NO_TEXT', 'The document contains no extractable text.');
    for (const batch of batches) await this.append(run, { type: 'RecordChunks', processingId, chunks: batch });
    const chunks = batches.flat();

    // The model searches use now (the old one while a model change is under way: the
    // re-embedder gives the document the new one's vectors), fixed for the whole run.
    const embeddings = (await activeEmbedder(this.app.searchIndex, this.app.embeddingModels, { fresh: true })) ?? this.app.embeddingModels.configured;
    // One batch at a time per run: runs of other workspaces interleave with this one's batches
    // at the embedder instead of queueing behind all of them.
    for (let i = 0; i < chunks.length; i += EMBED_BATCH) {
      if (this.stopping || signal.aborted) throw new RunAbandoned('stopping or superseded');
      const batch = chunks.slice(i, i + EMBED_BATCH);
      const embedStarted = process.hrtime.bigint();
      const vectors = await embedWithRetry(embeddings, batch.map((c) => c.content));
      this.app.metrics.embedding({ chunks: batch.length, seconds: seconds(embedStarted) });
      const dimensions = vectors[0]?.length ?? embeddings.dimensions;
      for (const part of vectorBatches(batch.map((c, j) => ({ index: c.index, vector: encodeVector(vectors[j]) })))) {
        await this.append(run, { type: 'RecordEmbeddings', processingId, modelId: embeddings.modelId, dimensions, vectors: part });
      }
    }
    await this.append(run, { type: 'MarkVerified', processingId });
  }

  private chunking(): ChunkOptions {
    return { chunkTokens: this.app.config.chunkTokens, overlapTokens: this.app.config.chunkOverlap };
  }

  /**
   * The text of the document's current source (the uploaded file, or the last auto-saved
   * content), normalised, and its chunks, cut into the payloads of their events, with the
   * token count and size: all made in the extraction worker (reused only for documents of
   * the same workspace).
   */
  private async extract(state: DocumentState, events: RecordedEvent[], signal: AbortSignal): Promise<EventReadyText> {
    const { timeoutMs: configuredTimeoutMs, ...limits } = this.app.config.extraction;
    const opts = { timeoutMs: this.options.extractTimeoutMs ?? configuredTimeoutMs, limits, signal, chunking: this.chunking(), eventParts: EVENT_PARTS, isolationKey: state.workspaceId };
    if (!this.keepsSpare) this.isolationKeys.add(state.workspaceId);
    let raw: ExtractedText;
    if (state.source === 'content') {
      const last = [...events].reverse().find((e) => e.type === 'DocumentContentUpdated') as unknown as (DocumentEvent & { type: 'DocumentContentUpdated' }) | undefined;
      if (!last) throw new ExtractionError('NO_TEXT', 'The document has no saved content.');
      const dir = path.join(this.app.config.dataDir, 'tmp');
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, `content-${randomUUID()}.${state.kind}`);
      await writeFile(file, last.data.content, { mode: 0o600 });
      try {
        raw = await extractText(file, state.kind, opts);
      } finally {
        await unlink(file).catch(() => undefined);
      }
    } else {
      const local = this.app.blobStore.localPath?.(state.blobSha256);
      if (local) {
        raw = await extractText(local, state.kind, opts);
      } else {
        const dir = path.join(this.app.config.dataDir, 'tmp');
        await mkdir(dir, { recursive: true });
        const file = path.join(dir, `blob-${randomUUID()}.${state.kind}`);
        try {
          // pipeline(): listeners on both streams at once, the blob stream destroyed (and its
          // cursor released) if the copy fails, and the partial copy removed in `finally`.
          await pipeline(await this.app.blobStore.get(state.blobSha256), createWriteStream(file, { mode: 0o600, flags: 'wx' }));
          raw = await extractText(file, state.kind, opts);
        } finally {
          await unlink(file).catch(() => undefined);
        }
      }
    }
    return { textParts: raw.textParts ?? [], chunkBatches: raw.chunkBatches ?? [], tokenCount: raw.tokenCount ?? 0, sizeBytes: raw.sizeBytes ?? 0 };
  }

  /**
   * Through the one command handler: decide on the stream's state and append with the
   * expected revision, re-deciding after a concurrent write (auto-save, reprocess, delete).
   * When the run is no longer current the decider emits nothing and the run is abandoned.
   */
  private async append(run: Run, command: DocumentCommand): Promise<void> {
    if (this.stopping) throw new RunAbandoned('stopping');
    const r = await handleCommand(this.app.eventStore, documentStream(run.documentId), documentDecider, command, { ...run.ctx, now: this.app.now() }, { workspaceId: run.state.workspaceId });
    if (r.events.length === 0) throw new RunAbandoned('run superseded');
    run.state = r.state;
  }
}

/**
 * A crashed embedding worker fails its batch and is replaced: try the batch again before
 * giving up. Through the provider's path for documents when it has one (GloVe-SIF: its
 * ingest thread), else `embed` (remote providers, USE-lite's own workers).
 */
async function embedWithRetry(embeddings: AppContext['embeddings'], texts: string[], attempts = 3): Promise<Float32Array[]> {
  for (let i = 1; ; i++) {
    try {
      return await (embeddings.embedDocuments ? embeddings.embedDocuments(texts) : embeddings.embed(texts));
    } catch (err) {
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 200 * i));
    }
  }
}

function toFailure(err: unknown): { code: ProcessingFailureCode; message: string } {
  if (err instanceof ExtractionError) return { code: err.code, message: err.message };
  if (err instanceof DomainError) return { code: 'PROCESSING_ERROR', message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (code === 'BLOB_NOT_FOUND' || code === 'ENOENT') return { code: 'CORRUPT', message: 'The uploaded file is no longer available; upload it again.' };
  return { code: 'PROCESSING_ERROR', message: `Processing failed: ${message}` };
}

/** The processor as a background service; `jobQueue` (KB_FEED=kafka) makes it take runs from the queue. */
export const documentProcessorService = (ctx: AppContext, jobQueue?: JobQueue, keyStore?: KeyStore | null, keepsSpareWorker = true) =>
  new DocumentProcessor(ctx, { ...(jobQueue ? { jobQueue } : {}), keyStore, keepsSpareWorker });
