import { randomUUID } from 'node:crypto';
import { AppContext } from '../app/context';
import { checkpointedConsumer, eachEvent, followingService, readStoreCheckpoint } from '../core/consumer';
import { fold, handleCommand, systemContext } from '../core/commandHandler';
import { RecordedEvent } from '../domain/event';
import { DocumentCommand, documentDecider } from '../domain/document/decider';
import { vectorBatches } from '../domain/document/eventParts';
import { DocumentEvent, documentStream, encodeVector } from '../domain/document/events';
import { EmbeddingModelCommand, embeddingModelDecider, EmbeddingModelState, ModelChange } from '../domain/embeddingModel/decider';
import { EMBEDDING_MODEL_STREAM, VectorModel } from '../domain/embeddingModel/events';
import { EmbeddingModels, EmbeddingProvider } from '../ports/embeddings';
import { ReembeddingProgress, reembeddingProgress } from '../search/vectorModels';
import { documentsCollection, DocumentView } from '../../projections/document/documentProjection';

export type { ReembeddingProgress } from '../search/vectorModels';

export const REEMBEDDER = 'reembedder';
/** Chunks per embedding call when re-embedding: small, so a batch never holds the embedder (or the event loop) long. */
export const REEMBED_BATCH = 32;
/** Documents re-embedded at once (one batch each in flight; their appends are committed together). */
export const REEMBED_CONCURRENCY = 4;
/** VERIFIED documents listed per read of the documents read model. */
const LIST_PAGE = 1000;

/** What the re-embedder keeps of a VERIFIED document of the documents read model. */
type VerifiedDoc = Pick<DocumentView, 'id' | 'workspaceId' | 'processingId'>;

/** How re-embedding one document ended: vectors made or restated, already done in this change, or no VERIFIED run to give them to. */
type DocOutcome = 'reembedded' | 'had-vectors' | 'not-verified';

/** What the follower acts on (onEvent). */
const REEMBEDDER_EVENT_TYPES: ReadonlySet<string> = new Set(['DocumentVerified']);

/**
 * Re-embedding without downtime: a process manager for embedding model changes.
 *
 * At start (and from `npm run kb -- reembed`) it compares the configured model with the
 * model the search index answers with. When they differ it records
 * EmbeddingModelChangeStarted in the `embedding-model` stream, then gives every VERIFIED
 * document the new model's vectors in its own stream (ChunksReembedded in batches under
 * MAX_EVENT_BYTES, then DocumentReembedded), and records EmbeddingModelChangeCompleted once
 * every VERIFIED document has them: the search index switches then, in one step. Meanwhile
 * searches and new uploads keep using the old model (documents verified during the change
 * are picked up by the next pass). Going back to the old model cancels the change.
 *
 * Low priority and fair: REEMBED_CONCURRENCY documents at a time, REEMBED_BATCH chunks per embedding call,
 * a yield to the event loop (and KB_REEMBED_PAUSE_MS) between calls; documents are taken
 * round-robin across workspaces, so a large workspace does not hold a small one's back.
 * The new model is its own provider: query embeddings never wait behind it.
 *
 * Crash-safe: everything it knows is in the log. After a restart it lists the VERIFIED
 * documents again; one already done is skipped, one half done continues at its first chunk
 * without the new vectors (the decider accepts batches only in chunk order).
 *
 * After a switch, a document whose run started before it and embedded with the old model
 * (a straggler) is indexed for BM25 until this service, following the log, gives it the
 * active model's vectors.
 */
export class Reembedder {
  readonly name = REEMBEDDER;
  private stopping = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private follower: { start(): Promise<void>; stop(): Promise<void> } | undefined;

  constructor(
    private readonly app: AppContext,
    private readonly models: EmbeddingModels,
    private readonly options: { pauseMs?: number; follow?: boolean; concurrency?: number } = {},
  ) {}

  async start(): Promise<void> {
    this.stopping = false;
    if (this.options.follow !== false) {
      // Runs verified before this service existed carry no model: following starts at the head then, not at 0.
      if ((await this.app.readStore.getCheckpoint(REEMBEDDER)) === 0) await this.app.readStore.setCheckpoint(REEMBEDDER, await this.app.eventStore.headPosition());
      this.follower = followingService(
        this.app.eventStore,
        checkpointedConsumer({ name: REEMBEDDER, checkpoint: readStoreCheckpoint(this.app.readStore, REEMBEDDER), handle: eachEvent((e) => this.onEvent(e)), eventTypes: REEMBEDDER_EVENT_TYPES }),
        { onError: (err) => this.app.logger.error({ err }, 're-embedder failed; retrying') },
      );
      await this.follower.start();
    }
    // Not awaited: the server listens while the index catches up and the change runs.
    this.running = this.run().catch((err: unknown) => {
      if (!this.stopping) this.app.logger.error({ err }, 're-embedding stopped');
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.follower?.stop();
    await Promise.race([this.running, new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  /** Runs a change to the configured model to its end (the CLI); resolves with what happened. */
  async runToCompletion(onProgress?: (p: ReembeddingProgress) => void): Promise<'nothing-to-do' | 'completed' | 'cancelled' | 'interrupted'> {
    this.stopping = false;
    const change = await this.reconcile();
    if (!change) return 'nothing-to-do';
    const outcome = await this.runChange(change, onProgress);
    return outcome;
  }

  private async run(): Promise<void> {
    for (let attempt = 1; !this.stopping; attempt++) {
      try {
        const change = await this.reconcile();
        if (change) await this.runChange(change);
        return;
      } catch (err) {
        if (this.stopping) return;
        this.app.logger.error({ err, attempt }, 're-embedding failed; retrying');
        await this.sleep(Math.min(30_000, 1000 * 2 ** (attempt - 1)));
      }
    }
  }

  /**
   * Waits for the search index to have applied the log's last event of the embedding model
   * (its active model is then the log's), then starts, resumes or cancels the change the configuration asks for.
   */
  private async reconcile(): Promise<ModelChange | undefined> {
    await this.indexCaughtUp();
    if (this.stopping) return undefined;
    const configured = this.models.configured;
    const to: VectorModel = { modelId: configured.modelId, dimensions: configured.dimensions };
    const { active } = await this.app.searchIndex.vectorModels();
    const state = await this.modelState();
    if (!active) {
      // No vector in the index: nothing to re-embed; the first vectors make their model the active one.
      if (state.change && state.change.to.modelId !== to.modelId) await this.decideModel({ type: 'CancelModelChange', reason: 'CONFIGURATION_REVERTED', now: this.app.now() });
      const current = (await this.modelState()).change;
      return current?.to.modelId === to.modelId ? current : undefined;
    }
    if (active.modelId === to.modelId && !state.change) return undefined;
    const after = await this.decideModel({ type: 'StartModelChange', changeId: randomUUID(), from: active, to, now: this.app.now() });
    if (after.change) {
      this.app.logger.warn(
        { from: after.change.from.modelId, to: after.change.to.modelId },
        'the embedding model changed: re-embedding every document in the background; searches use the old vectors until the switch',
      );
    }
    return after.change;
  }

  private async indexCaughtUp(): Promise<void> {
    // The index stores its checkpoint only with batches it acts on (the model's events among
    // them): it may stay behind the head over others, so the last model event is the mark.
    const events = await this.app.eventStore.readStream(EMBEDDING_MODEL_STREAM);
    const last = events.length > 0 ? events[events.length - 1].position : 0;
    while (!this.stopping && (await this.app.searchIndex.getCheckpoint()) < last) await this.sleep(200);
  }

  private async modelState(): Promise<EmbeddingModelState> {
    return fold(embeddingModelDecider, await this.app.eventStore.readStream(EMBEDDING_MODEL_STREAM));
  }

  /** Log position of the change's EmbeddingModelChangeStarted: a document restated after it is done for this change. */
  private async startedAt(changeId: string): Promise<number> {
    const events = await this.app.eventStore.readStream(EMBEDDING_MODEL_STREAM);
    return events.find((e) => e.type === 'EmbeddingModelChangeStarted' && (e.data as { changeId?: string }).changeId === changeId)?.position ?? 0;
  }

  private async decideModel(command: EmbeddingModelCommand): Promise<EmbeddingModelState> {
    const r = await handleCommand(this.app.eventStore, EMBEDDING_MODEL_STREAM, embeddingModelDecider, command, systemContext(this.app.now()));
    return r.state;
  }

  /**
   * Passes over the VERIFIED documents until a pass finds every one with the new vectors,
   * then completes the change. Stops when the change is no longer the current one.
   */
  private async runChange(change: ModelChange, onProgress?: (p: ReembeddingProgress) => void): Promise<'completed' | 'cancelled' | 'interrupted'> {
    const provider = this.models.forModel(change.to.modelId);
    if (!provider) throw new Error(`cannot make vectors of ${change.to.modelId}`);
    const since = await this.startedAt(change.changeId);
    const started = Date.now();
    /** Documents known to have the new vectors, by their VERIFIED run. */
    const done = new Map<string, string>();
    const report = async (): Promise<void> => {
      if (!onProgress) return;
      const p = reembeddingProgress(await this.app.searchIndex.vectorModels());
      if (p) onProgress(p);
    };
    for (;;) {
      if (this.stopping) return 'interrupted';
      if ((await this.modelState()).change?.changeId !== change.changeId) return 'cancelled';
      const pending = await this.pendingDocuments(done);
      if (pending.total === 0) {
        const verified = await this.verifiedCount();
        const after = await this.decideModel({ type: 'CompleteModelChange', changeId: change.changeId, documents: verified, now: this.app.now() });
        if (after.change) continue; // a document was verified meanwhile: another pass
        if (after.active?.modelId !== change.to.modelId) return 'cancelled';
        this.app.logger.info({ to: change.to.modelId, documents: verified, ms: Date.now() - started }, 'embedding model change completed: searches use the new vectors');
        await report();
        return 'completed';
      }
      let progressed = false;
      // A few documents at once, each taken round-robin by workspace: their appends share the log's group commit.
      const worker = async (): Promise<void> => {
        for (let next = pending.take(); next && !this.stopping; next = pending.take()) {
          const outcome = await this.reembedRetrying(next, change.to, provider, since);
          if (outcome !== 'not-verified') {
            done.set(next.id, next.processingId);
            progressed = true;
          }
          await report();
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, this.options.concurrency ?? REEMBED_CONCURRENCY) }, worker));
      if (this.stopping) return 'interrupted';
      // Only documents the read model shows VERIFIED but whose stream has moved on: let it catch up.
      if (!progressed) await this.sleep(500);
    }
  }

  /** VERIFIED documents without the new vectors as far as this pass knows, round-robin by workspace. */
  private async pendingDocuments(done: Map<string, string>): Promise<RoundRobin<VerifiedDoc>> {
    const queue = new RoundRobin<VerifiedDoc>();
    const docs = documentsCollection(this.app.readStore);
    for (let skip = 0; ; skip += LIST_PAGE) {
      const page = await docs.find({ processingStatus: 'VERIFIED' }, { sort: [{ field: 'id', direction: 'asc' }], skip, limit: LIST_PAGE });
      for (const d of page) if (done.get(d.id) !== d.processingId) queue.push(d.workspaceId, { id: d.id, workspaceId: d.workspaceId, processingId: d.processingId });
      if (page.length < LIST_PAGE) return queue;
    }
  }

  private verifiedCount(): Promise<number> {
    return documentsCollection(this.app.readStore).count({ processingStatus: 'VERIFIED' });
  }

  private async reembedRetrying(doc: VerifiedDoc, to: VectorModel, provider: EmbeddingProvider, since: number): Promise<DocOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.reembed(doc.id, to, provider, since);
      } catch (err) {
        if (this.stopping) throw err;
        this.app.logger.warn({ err, documentId: doc.id, attempt }, 're-embedding a document failed; retrying');
        await this.sleep(Math.min(30_000, 500 * 2 ** (attempt - 1)));
      }
    }
  }

  /**
   * Gives the document's VERIFIED run `to`'s vectors, from the first chunk without them, and
   * records DocumentReembedded (the index takes them then). Vectors the run already has in the
   * log (its own model's, an earlier change's) are not made again, only restated. Done once
   * per change: a DocumentReembedded after `since` (the change's start) ends it.
   */
  async reembed(documentId: string, to: VectorModel, provider: EmbeddingProvider, since: number): Promise<DocOutcome> {
    const stream = documentStream(documentId);
    const events = await this.app.eventStore.readStream(stream);
    const state = fold(documentDecider, events);
    if (state.status !== 'active' || state.processingStatus !== 'VERIFIED' || state.run.chunks === 0) return 'not-verified';
    const processingId = state.run.processingId;
    const restated = events.some((e) => {
      if (e.type !== 'DocumentReembedded' || e.position <= since) return false;
      const d = e.data as { processingId: string; modelId: string };
      return d.processingId === processingId && d.modelId === to.modelId;
    });
    if (restated) return 'had-vectors';
    const r = state.run.reembedded?.get(to.modelId);
    const texts: string[] = [];
    for (const e of events as unknown as DocumentEvent[]) {
      if (e.type === 'DocumentChunked' && e.data.processingId === processingId) for (const c of e.data.chunks) texts[c.index] = c.content;
    }
    const ctx = systemContext(this.app.now());
    const append = async (command: DocumentCommand): Promise<boolean> => {
      const res = await handleCommand(this.app.eventStore, stream, documentDecider, command, { ...ctx, now: this.app.now() }, { workspaceId: state.workspaceId });
      return res.events.length > 0;
    };
    const from = state.run.modelId === to.modelId ? state.run.chunks : (r?.embedded ?? 0);
    // Vectors already in the log: restated for this change. Else the batch that completes the run records DocumentReembedded with it.
    if (from >= state.run.chunks) return (await append({ type: 'MarkReembedded', processingId, modelId: to.modelId })) ? 'reembedded' : 'not-verified';
    for (let i = from; i < state.run.chunks; i += REEMBED_BATCH) {
      if (this.stopping) throw new Error('stopping');
      await this.yieldTurn();
      const indexes = Array.from({ length: Math.min(REEMBED_BATCH, state.run.chunks - i) }, (_, j) => i + j);
      const vectors = await provider.embed(indexes.map((k) => texts[k] ?? ''));
      for (const part of vectorBatches(indexes.map((k, j) => ({ index: k, vector: encodeVector(vectors[j]) })))) {
        // Nothing recorded: the run was superseded or deleted meanwhile; its next VERIFIED run is another pass's.
        if (!(await append({ type: 'RecordReembedding', processingId, modelId: to.modelId, dimensions: to.dimensions, vectors: part }))) return 'not-verified';
      }
    }
    return 'reembedded';
  }

  /**
   * A run verified with another model than the one the log moves to (the change's target,
   * else the active model) gets that model's vectors at once: an upload during a change, or
   * one whose processing straddled the switch (a pass may have listed the documents before
   * it was verified). Duplicates with a pass are refused by the decider and skipped.
   */
  private async onEvent(e: RecordedEvent): Promise<void> {
    if (e.type !== 'DocumentVerified') return;
    const data = (e as unknown as DocumentEvent & { type: 'DocumentVerified' }).data;
    if (data.modelId === undefined) return;
    const state = await this.modelState();
    const target = state.change?.to ?? state.active ?? (await this.app.searchIndex.vectorModels()).active;
    if (!target || target.modelId === data.modelId) return;
    const provider = this.models.forModel(target.modelId);
    if (!provider) return;
    await this.reembed(data.documentId, target, provider, state.change ? await this.startedAt(state.change.changeId) : 0);
  }

  private async yieldTurn(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    const pause = this.options.pauseMs ?? this.app.config.reembedPauseMs;
    if (pause > 0) await this.sleep(pause);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      t.unref?.();
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}

/** Items by group, taken round-robin: each group's first, then each group's second, … (as the processing scheduler serves workspaces). */
class RoundRobin<T> {
  private readonly groups = new Map<string, T[]>();
  private count = 0;

  get total(): number {
    return this.count;
  }

  push(group: string, item: T): void {
    const q = this.groups.get(group);
    if (q) q.push(item);
    else this.groups.set(group, [item]);
    this.count++;
  }

  /** The next item of the group served longest ago (the group goes to the back of the line). */
  take(): T | undefined {
    const first = this.groups.entries().next();
    if (first.done) return undefined;
    const [group, q] = first.value;
    const item = q.shift();
    this.groups.delete(group);
    if (q.length > 0) this.groups.set(group, q);
    this.count--;
    return item;
  }
}

/** The re-embedder as a background service (started with the document processor). */
export const reembedderService = (ctx: AppContext) => new Reembedder(ctx, ctx.embeddingModels);
