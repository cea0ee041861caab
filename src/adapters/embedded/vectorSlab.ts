/**
 * The in-memory side of the embedded index: every chunk's vector as int8 (per-vector
 * scale) in one slot of WebAssembly memory, scanned with SIMD (int8Scan.ts) for dense kNN.
 * The top candidates are re-scored exactly from the stored float32 vectors (`dotBuffer`).
 * Above `AnnSettings.buildAt` rows an inverted-file index (ivfIndex.ts) lists the slots by
 * nearest centroid, and a search over a scope of at least `minScope` chunks scans only the
 * nearest lists' in-scope members; smaller scopes (small workspaces, narrow filters) are
 * scanned exactly.
 *
 * Memory layout: [query region: the query as int16][capacity × stride int8 vectors][capacity int32 scan results].
 */
import { createGatherer, createMemory, createScanner, type GatherFn, type ScanFn, type WasmMemory, WASM_PAGE as PAGE } from './int8Scan';
import { type AnnSettings, DEFAULT_ANN, type IvfCentroids, IvfIndex, runSteps, trainCentroidsSteps, ZERO } from './ivfIndex';

const QUERY_REGION = 16384; // bytes reserved for the int16 query (dims <= 8192)
/** Background training of the approximate index runs in slices of about this long, between the thread's other work. */
const TRAINING_SLICE_MS = 4;
/** Slots assigned to the new index's lists between two yields. */
const ASSIGN_PER_STEP = 256;

/** A training of the approximate index under way in the background. */
interface Training {
  steps: Generator<void, void>;
  /** Once the centroids are trained: the new index, filled slot by slot up to `cursor`. */
  ivf?: IvfIndex;
  cursor: number;
  pending?: NodeJS.Immediate;
}

/** Documents a dense search may return: a mask over interned document ids, their list and chunk count. */
export interface SlabScope {
  mask: Uint8Array;
  docs: number[];
  chunks: number;
}

export class VectorSlab {
  private dimsValue = 0;
  private stride = 0;
  private queryMax = 0;
  private capacity = 0;
  private highWater = 0;
  private memory?: WasmMemory;
  private scan?: ScanFn;
  private gather?: GatherFn;
  private ivf?: IvfIndex;
  /** The next approximate index, trained in the background while `ivf` (or the exact scan) serves. */
  private training?: Training;
  /** While true (bulk loads), the approximate index is not trained or maintained: `endBulk` does it once. */
  private bulk = false;
  private readonly free: number[] = [];
  private rowOf = new Float64Array(0);
  private docOf = new Int32Array(0);
  private invScale = new Float32Array(0);
  private live = new Uint8Array(0);
  private readonly slotOfRow = new Map<number, number>();
  /** Live slots of each document, ascending (runs of them are scanned together). */
  private docSlots: (number[] | undefined)[] = [];
  /** Rows added before any vector fixed the dimensions (only vector-less chunks). */
  private readonly pendingWithoutVector: { id: number; doc: number }[] = [];
  private liveRows = 0;
  private writeCount = 0;

  constructor(private ann: AnnSettings = DEFAULT_ANN) {}

  /** Vector dimensions; 0 until the first vector (or the stored setting) fixes them. */
  get dims(): number {
    return this.dimsValue;
  }

  /** Chunks held in slots. */
  get liveCount(): number {
    return this.liveRows;
  }

  /** Chunk writes so far: slots added and removed, plus those noted with `noteWrites`. */
  get writes(): number {
    return this.writeCount;
  }

  noteWrites(n: number): void {
    this.writeCount += n;
  }

  /** Bytes of WebAssembly memory held. */
  get vectorBytes(): number {
    return this.memory?.buffer.byteLength ?? 0;
  }

  setDims(dims: number): void {
    if (!Number.isInteger(dims) || dims <= 0 || dims * 2 > QUERY_REGION) throw new Error(`unsupported vector dimensions: ${dims}`);
    this.dimsValue = dims;
    this.stride = Math.ceil(dims / 64) * 64; // the scanner reads 64 bytes per step
    this.queryMax = Math.min(32767, Math.floor(0x7fffffff / (127 * this.stride)));
  }

  /** Fixes the dimensions and gives the rows added without a vector so far their slots. */
  fixDims(dims: number): void {
    this.setDims(dims);
    for (const p of this.pendingWithoutVector.splice(0)) this.addSlot(p.id, p.doc, null);
  }

  /** Adds a row (a unit vector or none); before the dimensions are fixed it waits for them. */
  add(rowId: number, doc: number, vector: Float32Array | null): void {
    if (this.dimsValue > 0) this.addSlot(rowId, doc, vector);
    else this.pendingWithoutVector.push({ id: rowId, doc });
  }

  private ensureCapacity(needed: number): void {
    if (needed <= this.capacity) return;
    let cap = Math.max(1024, this.capacity);
    while (cap < needed) cap *= 2;
    const bytes = QUERY_REGION + cap * this.stride + cap * 4;
    const pages = Math.ceil(bytes / PAGE);
    if (!this.memory) {
      this.memory = createMemory(pages);
      this.scan = createScanner(this.memory);
      this.gather = createGatherer(this.memory);
    } else {
      const have = this.memory.buffer.byteLength / PAGE;
      if (pages > have) this.memory.grow(pages - have);
    }
    const grow = <T extends Float64Array | Int32Array | Float32Array | Uint8Array>(old: T, make: (n: number) => T): T => {
      const next = make(cap);
      next.set(old);
      return next;
    };
    this.rowOf = grow(this.rowOf, (n) => new Float64Array(n));
    this.docOf = grow(this.docOf, (n) => new Int32Array(n));
    this.invScale = grow(this.invScale, (n) => new Float32Array(n));
    this.live = grow(this.live, (n) => new Uint8Array(n));
    this.capacity = cap;
  }

  private vectorsView(): Int8Array {
    // Vectors start right after the query region and never move when memory grows.
    return new Int8Array(this.memory!.buffer, QUERY_REGION, this.capacity * this.stride);
  }

  private addSlot(rowId: number, doc: number, vector: Float32Array | null): void {
    const slot = this.free.length > 0 ? this.free.pop()! : this.highWater++;
    this.ensureCapacity(slot + 1);
    this.rowOf[slot] = rowId;
    this.docOf[slot] = doc;
    this.live[slot] = 1;
    this.slotOfRow.set(rowId, slot);
    this.liveRows++;
    this.writeCount++;
    const slots = (this.docSlots[doc] ??= []);
    slots.push(slot);
    if (slots.length > 1 && slots[slots.length - 2] > slot) slots.sort((a, b) => a - b);
    const view = this.vectorsView();
    const base = slot * this.stride;
    view.fill(0, base, base + this.stride);
    let max = 0;
    if (vector) for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]));
    if (vector && max > 0) {
      const s = 127 / max;
      for (let i = 0; i < vector.length; i++) view[base + i] = Math.round(vector[i] * s);
      this.invScale[slot] = max / 127;
    } else {
      this.invScale[slot] = 0;
    }
    if (!this.bulk) {
      const vec = view.subarray(base, base + this.stride);
      this.ivf?.put(slot, this.invScale[slot] === 0 ? ZERO : this.ivf.nearestList(vec), doc);
      // The index being filled in the background has passed this slot: it gets the row too.
      const next = this.training?.ivf;
      if (next && slot < this.training!.cursor) next.put(slot, this.invScale[slot] === 0 ? ZERO : next.nearestList(vec), doc);
      this.maintainIndex(false);
    }
  }

  /** Frees a row's slot (its document's slot list is dropped with `dropDoc`). */
  remove(rowId: number): void {
    const slot = this.slotOfRow.get(rowId);
    if (slot === undefined) return;
    this.slotOfRow.delete(rowId);
    this.live[slot] = 0;
    this.invScale[slot] = 0;
    this.liveRows--;
    this.writeCount++;
    this.free.push(slot);
    if (!this.bulk) {
      this.ivf?.remove(slot);
      this.training?.ivf?.remove(slot);
      this.maintainIndex(false);
    }
  }

  // ------------------------------------------------------------ the approximate index

  /** Changes the approximate search's settings (trains or drops the index as they say). */
  configureAnn(ann: AnnSettings): void {
    this.ann = ann;
    this.stopAnnTraining();
    if (!this.bulk) this.maintainIndex(true);
  }

  /** Stops maintaining the approximate index until `endBulk` (loads add every row first). */
  beginBulk(): void {
    this.bulk = true;
    this.ivf = undefined;
    this.stopAnnTraining();
  }

  /**
   * Ends a bulk load: the index is trained if the settings ask for one, unless `restoreIndex`
   * gave it; from `backgroundTrainingAt` rows in the background (a start-up without a usable
   * index file is not held for seconds of training: the exact scan serves meanwhile).
   */
  endBulk(): void {
    this.bulk = false;
    this.maintainIndex(false);
  }

  /** Whether a training of the approximate index is under way in the background. */
  get annTraining(): boolean {
    return this.training !== undefined;
  }

  /** Runs a background training under way to its end now (tests, and a caller that must have the new index). */
  finishAnnTraining(): void {
    const t = this.training;
    if (!t) return;
    if (t.pending) clearImmediate(t.pending);
    t.pending = undefined;
    runSteps(t.steps);
  }

  /** The approximate index, if there is one: its lists, the rows it was trained on, whether it was read from a file. */
  get annIndex(): { lists: number; trainedAt: number; restored: boolean; caughtUp?: true } | undefined {
    return this.ivf ? { lists: this.ivf.listCount, trainedAt: this.ivf.trainedAt, restored: this.ivf.restored, ...(this.ivf.caughtUp ? { caughtUp: true as const } : {}) } : undefined;
  }

  /**
   * Trains the index when it is missing or the rows have doubled or fallen below a quarter
   * since; drops it below the threshold. After a write (`now` false) from `backgroundTrainingAt`
   * rows the training runs in the background, in slices of TRAINING_SLICE_MS between the
   * thread's other work (at a million rows it is seconds of CPU, which would otherwise hold
   * every search of every workspace), while the index trained before (or the exact scan) keeps
   * serving; `now` (new settings) and smaller slabs train at once.
   */
  private maintainIndex(now: boolean): void {
    const a = this.ann;
    if (!a.enabled || this.dimsValue === 0 || this.liveRows === 0 || this.liveRows * 2 < a.buildAt) {
      this.ivf = undefined;
      this.stopAnnTraining();
      return;
    }
    if (this.training) {
      if (now) this.finishAnnTraining();
      return;
    }
    if (this.ivf) {
      const t = this.ivf.trainedAt;
      if (this.liveRows < 2 * t && this.liveRows * 4 > t) return;
    } else if (this.liveRows < a.buildAt) {
      return;
    }
    const training = { cursor: 0 } as Training;
    training.steps = this.trainingSteps(training);
    this.training = training;
    if (now || this.liveRows < a.backgroundTrainingAt) this.finishAnnTraining();
    else this.scheduleTraining(training);
  }

  /** Drops a background training under way (the index trained before stays). */
  stopAnnTraining(): void {
    const t = this.training;
    if (!t) return;
    if (t.pending) clearImmediate(t.pending);
    this.training = undefined;
  }

  private scheduleTraining(t: Training): void {
    t.pending = setImmediate(() => {
      t.pending = undefined;
      if (this.training !== t) return;
      const until = performance.now() + TRAINING_SLICE_MS;
      try {
        while (performance.now() < until) if (t.steps.next().done) return;
      } catch {
        // Not expected; the index trained before keeps serving, and the next write tries again.
        if (this.training === t) this.training = undefined;
        return;
      }
      this.scheduleTraining(t);
    });
    t.pending.unref(); // never keeps the thread alive
  }

  /** The training's steps: centroids from a sample, then every live slot assigned to a list; the new index replaces the old at the end. */
  private *trainingSteps(t: Training): Generator<void, void> {
    // Nothing below reads the slab's arrays across a yield without reading them again: writes go on meanwhile.
    const slots: number[] = [];
    for (let s = 0; s < this.highWater; s++) if (this.live[s] !== 0 && this.invScale[s] !== 0) slots.push(s);
    if (slots.length === 0) {
      this.ivf = undefined;
      this.training = undefined;
      return;
    }
    const trainedAt = this.liveRows;
    const lists = Math.max(1, Math.round(Math.sqrt(trainedAt) * this.ann.listsPerRoot));
    const centroids = yield* trainCentroidsSteps(
      { dims: this.dimsValue, stride: this.stride, queryMax: this.queryMax, vectors: this.vectorsView(), slots: Int32Array.from(slots) },
      lists,
      trainedAt,
    );
    const ivf = new IvfIndex(centroids, this.stride, this.queryMax, trainedAt);
    t.ivf = ivf;
    t.cursor = 0;
    while (t.cursor < this.highWater) {
      const vectors = this.vectorsView();
      const end = Math.min(this.highWater, t.cursor + ASSIGN_PER_STEP);
      for (let s = t.cursor; s < end; s++) {
        if (this.live[s] === 0) continue;
        const base = s * this.stride;
        ivf.put(s, this.invScale[s] === 0 ? ZERO : ivf.nearestList(vectors.subarray(base, base + this.stride)), this.docOf[s]);
      }
      t.cursor = end;
      if (t.cursor < this.highWater) yield;
    }
    this.ivf = ivf;
    this.training = undefined;
  }

  /** Every live row's id and list, for the index's file (undefined without an index). */
  indexRows(): { ivf: IvfIndex; rowIds: Float64Array; lists: Int32Array } | undefined {
    const ivf = this.ivf;
    if (!ivf) return undefined;
    const rowIds = new Float64Array(this.liveRows);
    const lists = new Int32Array(this.liveRows);
    let i = 0;
    for (let s = 0; s < this.highWater; s++) {
      if (this.live[s] === 0) continue;
      rowIds[i] = this.rowOf[s];
      lists[i++] = ivf.listOfSlot(s);
    }
    return { ivf, rowIds, lists };
  }

  /**
   * Takes the index from its file (during a bulk load, after every row was added): true when
   * the file names exactly the rows held, each vector-less row in the vector-less list and
   * every other in a list; else nothing is taken and `endBulk` trains one. With `fresh` (the
   * file is older, as after a crash that followed writes; its vectors unchanged since), it is
   * caught up instead: rows gone since are left out, the rows `fresh` names (written since,
   * their ids possibly reused) and those the file does not hold are assigned to their nearest
   * list, the others keep the file's.
   */
  restoreIndex(saved: { centroids: IvfCentroids; rowIds: Float64Array; lists: Int32Array; trainedAt: number }, fresh?: ReadonlySet<number>): boolean {
    if (!this.bulk || saved.centroids.dims !== this.dimsValue) return false;
    if (!fresh && saved.rowIds.length !== this.liveRows) return false;
    const ivf = new IvfIndex(saved.centroids, this.stride, this.queryMax, saved.trainedAt);
    for (let i = 0; i < saved.rowIds.length; i++) {
      const slot = this.slotOfRow.get(saved.rowIds[i]);
      if (fresh && (slot === undefined || fresh.has(saved.rowIds[i]))) continue;
      if (slot === undefined || ivf.listOfSlot(slot) !== -1) return false;
      const list = saved.lists[i];
      if ((list === ZERO) !== (this.invScale[slot] === 0)) return false;
      ivf.put(slot, list, this.docOf[slot]);
    }
    if (fresh) {
      const vectors = this.vectorsView();
      for (let s = 0; s < this.highWater; s++) {
        if (this.live[s] === 0 || ivf.listOfSlot(s) !== -1) continue;
        const base = s * this.stride;
        ivf.put(s, this.invScale[s] === 0 ? ZERO : ivf.nearestList(vectors.subarray(base, base + this.stride)), this.docOf[s]);
      }
      ivf.caughtUp = true;
    }
    if (ivf.size !== this.liveRows) return false;
    ivf.restored = true;
    this.ivf = ivf;
    return true;
  }

  /** Forgets a document's slot list (its rows are removed or about to be re-added). */
  dropDoc(doc: number): void {
    this.docSlots[doc] = undefined;
  }

  /** Forgets a document's rows still waiting for the dimensions. */
  dropPending(doc: number): void {
    const pending = this.pendingWithoutVector;
    for (let i = pending.length - 1; i >= 0; i--) if (pending[i].doc === doc) pending.splice(i, 1);
  }

  /** Whether the row is held and its document is in the mask. */
  inScope(rowId: number, mask: Uint8Array): boolean {
    const slot = this.slotOfRow.get(rowId);
    return slot !== undefined && mask[this.docOf[slot]] === 1;
  }

  /**
   * Rows' cosines with a float query from their int8 copies, with a bound of each one's
   * error: the stored float vector's exact cosine lies within `[cosine − error, cosine +
   * error]`. Each component was rounded to the nearest of 255 steps of `max/127`, so it is off
   * by at most half a step, and the cosine by at most half a step times the query's L1 norm;
   * a little is added for the step being a float32. A row held without a vector (or with a
   * zero one) has cosine 0 exactly (error 0). A row the slab does not hold gets error -1.
   */
  approximateCosines(rowIds: readonly number[], query: Float32Array, cosines: Float64Array, errors: Float64Array): void {
    let queryL1 = 0;
    for (let i = 0; i < query.length; i++) queryL1 += Math.abs(query[i]);
    const view = this.memory ? this.vectorsView() : undefined;
    const n = Math.min(query.length, this.stride);
    for (let r = 0; r < rowIds.length; r++) {
      const slot = this.slotOfRow.get(rowIds[r]);
      if (slot === undefined || !view) {
        cosines[r] = 0;
        errors[r] = -1;
        continue;
      }
      const step = this.invScale[slot];
      if (step === 0) {
        cosines[r] = 0;
        errors[r] = 0;
        continue;
      }
      const base = slot * this.stride;
      let s = 0;
      for (let i = 0; i < n; i++) s += query[i] * view[base + i];
      cosines[r] = s * step;
      errors[r] = queryL1 * step * 0.5001 + 1e-9;
    }
  }

  /**
   * Top `m` rows by approximate (int8) cosine among the scope's documents. A scope that is
   * a small part of the index is scanned alone, run by run of contiguous slots of its
   * documents; a large one in a single pass over all slots, filtered by the mask.
   */
  topK(query: Float32Array, scope: SlabScope, m: number): number[] {
    if (!this.scan || !this.memory || this.highWater === 0 || scope.chunks === 0) return [];
    let qmax = 0;
    for (let i = 0; i < query.length; i++) qmax = Math.max(qmax, Math.abs(query[i]));
    if (qmax === 0) return [];
    const q16 = new Int16Array(this.memory.buffer, 0, this.stride);
    q16.fill(0);
    const qs = this.queryMax / qmax;
    for (let i = 0; i < query.length; i++) q16[i] = Math.round(query[i] * qs);
    const n = this.highWater;
    const outOff = QUERY_REGION + this.capacity * this.stride;
    const out = new Int32Array(this.memory.buffer, outOff, n);
    // Bounded min-heap of (score, slot).
    const heapScore = new Float64Array(m);
    const heapSlot = new Int32Array(m);
    let size = 0;
    const inv = this.invScale;
    const offer = (s: number, score: number): void => {
      if (size < m) {
        let i = size++;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heapScore[p] <= score) break;
          heapScore[i] = heapScore[p];
          heapSlot[i] = heapSlot[p];
          i = p;
        }
        heapScore[i] = score;
        heapSlot[i] = s;
      } else if (score > heapScore[0]) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= size) break;
          const r = l + 1;
          const c = r < size && heapScore[r] < heapScore[l] ? r : l;
          if (heapScore[c] >= score) break;
          heapScore[i] = heapScore[c];
          heapSlot[i] = heapSlot[c];
          i = c;
        }
        heapScore[i] = score;
        heapSlot[i] = s;
      }
    };
    const mask = scope.mask;
    const docOf = this.docOf;
    if (this.ivf && this.ann.enabled && !this.ann.searchExact && scope.chunks >= this.ann.minScope) {
      // The nearest lists' in-scope members, until enough of the scope is gathered.
      const ivf = this.ivf;
      const want = Math.max(Math.ceil((this.ann.probeLists * scope.chunks) / ivf.listCount), this.ann.minProbe, 1);
      const gathered = new Int32Array(this.memory.buffer, outOff, this.capacity);
      let count = 0;
      for (const l of ivf.rankLists(query)) {
        const members = ivf.list(l);
        const docs = ivf.listDocs(l);
        for (let i = 0; i < members.length; i++) if (mask[docs[i]] === 1) gathered[count++] = members[i];
        if (count >= want) break;
      }
      const slots = gathered.slice(0, count);
      this.gather!(QUERY_REGION, outOff, count, this.stride, 0);
      for (let i = 0; i < count; i++) offer(slots[i], gathered[i] * inv[slots[i]]);
      const zero = ivf.zeroMembers();
      for (let i = 0; i < zero.slots.length; i++) if (mask[zero.docs[i]] === 1) offer(zero.slots[i], 0);
    } else if (scope.chunks * 4 >= this.liveRows) {
      this.scan(QUERY_REGION, n, this.stride, 0, outOff);
      const live = this.live;
      for (let s = 0; s < n; s++) if (live[s] !== 0 && mask[docOf[s]] === 1) offer(s, out[s] * inv[s]);
    } else {
      for (const d of scope.docs) {
        const slots = this.docSlots[d];
        if (!slots) continue;
        for (let i = 0; i < slots.length; ) {
          let j = i + 1;
          while (j < slots.length && slots[j] === slots[j - 1] + 1) j++;
          const first = slots[i];
          this.scan(QUERY_REGION + first * this.stride, j - i, this.stride, 0, outOff + first * 4);
          for (let t = i; t < j; t++) offer(slots[t], out[slots[t]] * inv[slots[t]]);
          i = j;
        }
      }
    }
    const order = Array.from({ length: size }, (_, i) => i).sort((a, b) => heapScore[b] - heapScore[a]);
    return order.map((i) => this.rowOf[heapSlot[i]]);
  }

  /** Drops every row and the memory; the dimensions are unfixed again. Counts as a write. */
  clear(): void {
    this.slotOfRow.clear();
    this.free.length = 0;
    this.highWater = 0;
    this.liveRows = 0;
    this.writeCount++;
    this.live.fill(0);
    this.docSlots = [];
    this.pendingWithoutVector.length = 0;
    this.dimsValue = 0;
    this.capacity = 0;
    this.memory = undefined;
    this.scan = undefined;
    this.gather = undefined;
    this.ivf = undefined;
    this.rowOf = new Float64Array(0);
    this.docOf = new Int32Array(0);
    this.invScale = new Float32Array(0);
    this.live = new Uint8Array(0);
  }
}

/** A stored float32 vector blob as a Float32Array (a copy: blobs need not be 4-byte aligned). */
export function bufferToFloats(b: Buffer): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer, 0, b.byteLength >> 2);
}

/** Cosines already computed for a query vector (the feedback pass reuses the first pass's). */
const cosineCache = new WeakMap<Float32Array, Map<Buffer, number>>();

/** Exact dot product (cosine, both unit) of a query and a stored float32 vector blob, memoised per query. */
export function dotBuffer(q: Float32Array, b: Buffer): number {
  let cache = cosineCache.get(q);
  if (!cache) cosineCache.set(q, (cache = new Map()));
  const known = cache.get(b);
  if (known !== undefined) return known;
  // A view when the blob is 4-byte aligned, else a copy.
  const v = b.byteOffset % 4 === 0 ? new Float32Array(b.buffer, b.byteOffset, b.byteLength >> 2) : bufferToFloats(b);
  const n = Math.min(q.length, v.length);
  let s = 0;
  for (let i = 0; i < n; i++) s += q[i] * v[i];
  cache.set(b, s);
  return s;
}
