import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { unlink, writeFile, mkdir } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { AppContext } from '../app/context';
import { CommandContext, fold, systemContext, toNewEvents } from '../core/commandHandler';
import { RecordedEvent } from '../domain/event';
import { DomainError } from '../domain/errors';
import { DocumentCommand, documentDecider, DocumentState } from '../domain/document/decider';
import { ChunkData, DocumentEvent, documentStream, encodeVector, ExtractedSectionData, ProcessingFailureCode } from '../domain/document/events';
import { WrongExpectedRevisionError } from '../ports/eventStore';
import { Subscription } from '../ports/eventStore';
import { Job, JobConsumer, JobQueue } from '../ports/jobQueue';
import { PoisonMessageError } from '../adapters/jobRetry';
import { infrastructureOf } from '../app/infrastructure';
import { PROCESS_DOCUMENT_JOB } from '../roles/pipelineProjections';
import { chunkText, countTokens } from './chunker';
import { DEFAULT_EXTRACT_TIMEOUT_MS, ExtractionError, extractText } from './extract';
import { normalizeText } from './normalize';

export const PROCESSOR_CHECKPOINT = 'document-processor';
/** Chunks per DocumentChunked event and per embedding call / ChunksEmbedded event. */
export const CHUNK_EVENT_BATCH = 256;
export const EMBED_BATCH = 64;

/** The run was superseded (new content, reprocess, delete) or the service is stopping. */
class RunAbandoned extends Error {}

/** How a call of `process` ended. */
export type ProcessOutcome = 'finished' | 'skipped' | 'resumed' | 'superseded' | 'interrupted';

interface Run {
  documentId: string;
  state: DocumentState;
  revision: number;
  ctx: CommandContext;
}

/**
 * The document processor: a process manager driven by the event log. Each
 * DocumentProcessingStarted (appended together with DocumentUploaded, DocumentContentUpdated
 * or DocumentReprocessRequested) starts a run: extract (worker thread, time-out) →
 * normalise → chunk → embed in batches → DocumentVerified, or DocumentProcessingFailed.
 *
 * One document at a time, so memory stays bounded by one document. Crash-safe: the
 * checkpoint (`document-processor` in the read store) moves past a ProcessingStarted only
 * once the run's outcome is appended; after a crash the event is delivered again and, when
 * the run had already appended some events, it restarts as a fresh run (new processingId,
 * reason RESUMED) so no run ever holds duplicated pipeline events.
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

  constructor(
    private readonly app: AppContext,
    private readonly options: { extractTimeoutMs?: number; jobQueue?: JobQueue } = {},
  ) {}

  /** The queue this processor takes its runs from; none when it follows the log. */
  private get jobQueue(): JobQueue | undefined {
    return this.options.jobQueue ?? infrastructureOf(this.app)?.jobQueue;
  }

  async start(): Promise<void> {
    this.stopping = false;
    const queue = this.jobQueue;
    if (queue) {
      this.consumer = await queue.consume((job) => this.handleJob(job), {
        concurrency: 1, // one document at a time per worker: memory stays bounded
        onDeadLetter: (job, err) => this.app.logger.error({ err, jobId: job.id, payload: job.payload }, 'document processing job dead-lettered'),
      });
      return;
    }
    const from = await this.app.readStore.getCheckpoint(PROCESSOR_CHECKPOINT);
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
    if (!sub) return;
    // A run in flight is abandoned at its next step; it is resumed after the restart.
    await Promise.race([sub.stop(), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  private async handleBatch(events: RecordedEvent[]): Promise<void> {
    const from = await this.app.readStore.getCheckpoint(PROCESSOR_CHECKPOINT);
    let last = from;
    for (const e of events) {
      if (this.stopping) throw new RunAbandoned('stopping');
      if (e.position <= from) continue;
      if (e.type === 'DocumentProcessingStarted') {
        const data = e.data as { documentId: string; processingId: string };
        await this.process(data.documentId, data.processingId);
        await this.app.readStore.setCheckpoint(PROCESSOR_CHECKPOINT, e.position);
      }
      last = e.position;
    }
    if (last > from) await this.app.readStore.setCheckpoint(PROCESSOR_CHECKPOINT, last);
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
   * `resumeInPlace` (following the log), else left to that run's own job.
   */
  async process(documentId: string, processingId: string, options: { resumeInPlace?: boolean } = {}): Promise<ProcessOutcome> {
    const streamId = documentStream(documentId);
    const events = await this.app.eventStore.readStream(streamId);
    if (events.length === 0) return 'skipped';
    const state = fold(documentDecider, events);
    if (state.status !== 'active' || state.processingStatus !== 'PROCESSING' || state.run.processingId !== processingId) return 'skipped';
    const workspace = await this.app.readStore.collection('workspaces').get(state.workspaceId);
    if (!workspace) return 'skipped'; // the workspace was deleted with its documents
    const run: Run = { documentId, state, revision: events[events.length - 1].revision, ctx: systemContext(this.app.now()) };
    let id = processingId;
    const started = Date.now();
    try {
      if (state.run.extracted || state.run.chunks > 0) {
        id = randomUUID();
        await this.append(run, { type: 'ResumeProcessing', processingId, newProcessingId: id, now: this.app.now() });
        if (options.resumeInPlace === false) return 'resumed';
      }
      await this.pipeline(run, id, events);
      this.app.logger.info({ documentId, processingId: id, ms: Date.now() - started, status: run.state.processingStatus }, 'document processed');
      return 'finished';
    } catch (err) {
      if (err instanceof RunAbandoned) return this.stopping ? 'interrupted' : 'superseded';
      if (this.stopping) return 'interrupted'; // stores may be closing: the run resumes after the restart
      const failure = toFailure(err);
      this.app.logger.warn({ err, documentId, processingId: id, code: failure.code }, 'document processing failed');
      try {
        await this.append(run, { type: 'MarkFailed', processingId: id, code: failure.code, message: failure.message });
      } catch (inner) {
        if (!(inner instanceof RunAbandoned)) throw inner;
        return this.stopping ? 'interrupted' : 'superseded';
      }
      return 'finished';
    }
  }

  private async pipeline(run: Run, processingId: string, events: RecordedEvent[]): Promise<void> {
    const sections = await this.extract(run.state, events);
    const text = sections.map((s) => s.text).join('\n\n');
    const tokenCount = sections.reduce((n, s) => n + countTokens(s.text), 0);
    if (sections.length === 0) throw new ExtractionError('NO_TEXT', 'The document contains no extractable text.');
    await this.append(run, { type: 'RecordTextExtracted', processingId, sections, tokenCount, sizeBytes: Buffer.byteLength(text, 'utf8') });

    const chunks = chunkText(sections, { chunkTokens: this.app.config.chunkTokens, overlapTokens: this.app.config.chunkOverlap });
    if (chunks.length === 0) throw new ExtractionError('NO_TEXT', 'The document contains no extractable text.');
    for (let i = 0; i < chunks.length; i += CHUNK_EVENT_BATCH) {
      const batch: ChunkData[] = chunks.slice(i, i + CHUNK_EVENT_BATCH).map((c) => ({
        index: c.index,
        content: c.content,
        tokenCount: c.tokenCount,
        ...(c.page !== undefined ? { page: c.page } : {}),
        ...(c.section !== undefined ? { section: c.section } : {}),
      }));
      await this.append(run, { type: 'RecordChunks', processingId, chunks: batch });
    }

    const { embeddings } = this.app;
    for (let i = 0; i < chunks.length; i += EMBED_BATCH) {
      if (this.stopping) throw new RunAbandoned('stopping');
      const batch = chunks.slice(i, i + EMBED_BATCH);
      const vectors = await embedWithRetry(embeddings, batch.map((c) => c.content));
      await this.append(run, {
        type: 'RecordEmbeddings',
        processingId,
        modelId: embeddings.modelId,
        dimensions: vectors[0]?.length ?? embeddings.dimensions,
        vectors: batch.map((c, j) => ({ index: c.index, vector: encodeVector(vectors[j]) })),
      });
    }
    await this.append(run, { type: 'MarkVerified', processingId });
  }

  /** Sections of the document's current source (the uploaded file, or the last auto-saved content), normalised. */
  private async extract(state: DocumentState, events: RecordedEvent[]): Promise<ExtractedSectionData[]> {
    const timeoutMs = this.options.extractTimeoutMs ?? DEFAULT_EXTRACT_TIMEOUT_MS;
    let raw: { sections: ExtractedSectionData[] };
    if (state.source === 'content') {
      const last = [...events].reverse().find((e) => e.type === 'DocumentContentUpdated') as unknown as (DocumentEvent & { type: 'DocumentContentUpdated' }) | undefined;
      if (!last) throw new ExtractionError('NO_TEXT', 'The document has no saved content.');
      const dir = path.join(this.app.config.dataDir, 'tmp');
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, `content-${randomUUID()}.${state.kind}`);
      await writeFile(file, last.data.content, { mode: 0o600 });
      try {
        raw = await extractText(file, state.kind, { timeoutMs });
      } finally {
        await unlink(file).catch(() => undefined);
      }
    } else {
      const local = this.app.blobStore.localPath?.(state.blobSha256);
      if (local) {
        raw = await extractText(local, state.kind, { timeoutMs });
      } else {
        const dir = path.join(this.app.config.dataDir, 'tmp');
        await mkdir(dir, { recursive: true });
        const file = path.join(dir, `blob-${randomUUID()}.${state.kind}`);
        try {
          // pipeline(): listeners on both streams at once, the blob stream destroyed (and its
          // cursor released) if the copy fails, and the partial copy removed in `finally`.
          await pipeline(await this.app.blobStore.get(state.blobSha256), createWriteStream(file, { mode: 0o600, flags: 'wx' }));
          raw = await extractText(file, state.kind, { timeoutMs });
        } finally {
          await unlink(file).catch(() => undefined);
        }
      }
    }
    const out: ExtractedSectionData[] = [];
    for (const s of raw.sections) {
      const text = normalizeText(s.text);
      if (text) out.push({ text, ...(s.page !== undefined ? { page: s.page } : {}), ...(s.section !== undefined ? { section: s.section } : {}) });
    }
    return out;
  }

  /**
   * Decide on the cached state and append with the expected revision. A concurrent write
   * (auto-save, reprocess, delete) makes the append fail: re-read, re-decide, and when the
   * run is no longer current the decider emits nothing and the run is abandoned.
   */
  private async append(run: Run, command: DocumentCommand): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.stopping) throw new RunAbandoned('stopping');
      const events = documentDecider.decide(command, run.state);
      if (events.length === 0) throw new RunAbandoned('run superseded');
      try {
        const r = await this.app.eventStore.append(documentStream(run.documentId), toNewEvents(events, { ...run.ctx, now: this.app.now() }, run.state.workspaceId), run.revision);
        run.state = events.reduce((s, e) => documentDecider.evolve(s, e), run.state);
        run.revision = r.nextRevision;
        return;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError) || attempt >= 5) throw err;
        const stream = await this.app.eventStore.readStream(documentStream(run.documentId));
        run.state = fold(documentDecider, stream);
        run.revision = stream[stream.length - 1].revision;
      }
    }
  }
}

/** A crashed embedding worker fails its batch and is replaced: try the batch again before giving up. */
async function embedWithRetry(embeddings: AppContext['embeddings'], texts: string[], attempts = 3): Promise<Float32Array[]> {
  for (let i = 1; ; i++) {
    try {
      return await embeddings.embed(texts);
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

export const documentProcessorService = (ctx: AppContext) => new DocumentProcessor(ctx);
