/**
 * The approximate side of the dense leg: an inverted-file index (IVF) over the int8 vectors of
 * a VectorSlab. The vectors are split into lists by the nearest of L centroids (spherical
 * k-means, L ≈ 2√n); a search ranks the centroids, takes the nearest lists until enough
 * members of the search's scope are gathered, and scans only those with the SIMD kernel
 * (`gather` in int8Scan.ts, rows in pairs). The slab then re-scores its candidates exactly, as for a full scan.
 *
 * Training is two-level so that it stays cheap at a million vectors: C ≈ √L coarse centroids
 * first, then each coarse cluster is split into lists in proportion to its share of a sample.
 * The lists of one coarse cluster are numbered contiguously, so a vector is assigned by
 * scanning the C coarse centroids and the lists of its two nearest coarse clusters (about
 * 3·√L dot products instead of L). A search ranks all L lists directly.
 *
 * Inserts go to the nearest list, deletes leave their list (swap with its last member): both
 * O(1) besides the assignment. The centroids are not moved by later writes; the slab trains
 * again when its rows have doubled (or fallen to a quarter) since: at a million rows that is
 * a few seconds of CPU (training, then every row assigned), once per doubling, done in the
 * background in slices of a few milliseconds (`trainCentroidsSteps` yields as it goes) while
 * searches keep using the index trained before. Vector-less rows sit in a list of their own (`ZERO`), scored 0 like a full
 * scan scores them. Each member's document is kept beside it, for the scope check.
 *
 * Recall is set by how many lists' worth of the scope a search scans (`probeLists`), not by a
 * share of the index: measured on the search bench (GloVe-SIF vectors of Cranfield-drawn text),
 * 64 lists' worth gave recall@10 0.97 at 100k (568 lists) and 0.978 at 1M (2,003 lists).
 *
 * Persistence (`writeIvf`/`readIvf`): the centroids and each row's list, stamped like the
 * lexical snapshot; the slab checks that the file names exactly its rows.
 */
import fs from 'node:fs';
import { createMemory, createScanner, type ScanFn, type WasmMemory, WASM_PAGE } from './int8Scan';
import { mulberry32 as rng } from '../../util/random';

const QUERY_REGION = 16384;

/** Settings of the approximate dense search (see `DEFAULT_ANN`). */
export interface AnnSettings {
  /** Off: every dense search is an exact scan. */
  enabled: boolean;
  /** The index is trained once the slab holds this many rows (and dropped below half of it). */
  buildAt: number;
  /** A search uses it when its scope holds at least this many chunks; smaller scopes are scanned exactly. */
  minScope: number;
  /**
   * How much of the scope a search scans, in lists: the nearest lists' in-scope members are
   * gathered until they number `probeLists` × (scope's chunks / lists), so a filter to a tenth
   * of the index scans a tenth as many members from as many lists' worth of the nearest ones.
   */
  probeLists: number;
  /** At least this many in-scope members are scanned. */
  minProbe: number;
  /** Lists: this many times √rows. */
  listsPerRoot: number;
  /** Searches scan exactly though the index is kept up to date (to compare both on one index). */
  searchExact: boolean;
  /**
   * From this many rows, a training a write calls for runs in the background (in slices, the
   * index trained before serving meanwhile); below, at once (tens of milliseconds at most).
   */
  backgroundTrainingAt: number;
}

/** The defaults; operators set `buildAt` and `minScope` (one value), `probeLists` and `minProbe` with KB_DENSE_INDEX_MIN_CHUNKS, _PROBE_LISTS and _MIN_PROBE (src/config/config.ts, wired in src/container.ts). */
export const DEFAULT_ANN: AnnSettings = {
  enabled: true,
  buildAt: 20_000,
  minScope: 20_000,
  probeLists: 64,
  minProbe: 4096,
  listsPerRoot: 2,
  searchExact: false,
  backgroundTrainingAt: 5_000,
};

/** Lists whose members hold no vector (scored 0). */
export const ZERO = -2;

/** Centroids as unit float vectors, in the int8 memory the kernel scans. */
class CentroidTable {
  readonly count: number;
  private readonly memory: WasmMemory;
  private readonly scan: ScanFn;
  readonly invScale: Float32Array;
  private readonly outOff: number;
  readonly out: Int32Array;
  private readonly q16: Int16Array;

  constructor(
    readonly floats: Float32Array,
    private readonly dims: number,
    private readonly stride: number,
  ) {
    this.count = floats.length / dims;
    const bytes = QUERY_REGION + this.count * stride + this.count * 4;
    this.memory = createMemory(Math.ceil(bytes / WASM_PAGE));
    this.scan = createScanner(this.memory);
    this.invScale = new Float32Array(this.count);
    const i8 = new Int8Array(this.memory.buffer, QUERY_REGION, this.count * stride);
    for (let c = 0; c < this.count; c++) {
      let max = 0;
      for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(floats[c * dims + i]));
      if (max === 0) continue;
      const s = 127 / max;
      for (let i = 0; i < dims; i++) i8[c * stride + i] = Math.round(floats[c * dims + i] * s);
      this.invScale[c] = max / 127;
    }
    this.outOff = QUERY_REGION + this.count * stride;
    this.out = new Int32Array(this.memory.buffer, this.outOff, this.count);
    this.q16 = new Int16Array(this.memory.buffer, 0, stride);
  }

  /** The query region, to be filled with the query as int16 before `score`. */
  query(): Int16Array {
    return this.q16;
  }

  /** Raw dot products of the query with centroids [from, to) into `out`. */
  score(from: number, to: number): void {
    if (to > from) this.scan(QUERY_REGION + from * this.stride, to - from, this.stride, 0, this.outOff + from * 4);
  }

  /** The best of centroids [from, to) after `score` (by cosine: raw dot × the centroid's scale). */
  best(from: number, to: number): number {
    let bestC = from;
    let bestS = -Infinity;
    for (let c = from; c < to; c++) {
      const s = this.out[c] * this.invScale[c];
      if (s > bestS) {
        bestS = s;
        bestC = c;
      }
    }
    return bestC;
  }
}

/** What training reads from the slab: its int8 vectors (stride bytes each; their directions are what k-means clusters). */
export interface TrainingSource {
  dims: number;
  stride: number;
  /** Largest multiplier of an int8 vector as an int16 query without int32 overflow. */
  queryMax: number;
  vectors: Int8Array;
  /** Slots holding a vector (live, non-zero). */
  slots: Int32Array;
}

/** Rows of work between two yields of the training's steps. */
const ROWS_PER_STEP = 512;

/** Runs steps to their end at once. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Plain k-means on the unit sphere over `rows` (indices into `data`, dims floats each); returns at most k unit centroids. Yields every ROWS_PER_STEP rows. */
function* sphericalKMeans(data: Float32Array, dims: number, stride: number, queryMax: number, rows: Int32Array, k: number, iterations: number, rand: () => number): Generator<void, Float32Array> {
  const n = rows.length;
  // Seeds: k distinct rows (all of them when there are no more than k).
  const order = Int32Array.from(rows);
  k = Math.max(1, Math.min(k, n));
  const centroids = new Float32Array(k * dims);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(rand() * (n - i));
    [order[i], order[j]] = [order[j], order[i]];
    centroids.set(data.subarray(order[i] * dims, order[i] * dims + dims), i * dims);
  }
  if (n <= k) return centroids;
  // Each row as the kernel's int16 query, once.
  const q16 = new Int16Array(n * stride);
  for (let r = 0; r < n; r++) {
    const base = rows[r] * dims;
    for (let i = 0; i < dims; i++) q16[r * stride + i] = Math.round(data[base + i] * queryMax);
  }
  const assign = new Int32Array(n);
  const sums = new Float64Array(k * dims);
  const sizes = new Int32Array(k);
  for (let it = 0; it < iterations; it++) {
    const table = new CentroidTable(centroids, dims, stride);
    const q = table.query();
    for (let r = 0; r < n; r++) {
      q.set(q16.subarray(r * stride, r * stride + stride));
      table.score(0, k);
      assign[r] = table.best(0, k);
      if (r % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
    }
    sums.fill(0);
    sizes.fill(0);
    for (let r = 0; r < n; r++) {
      const c = assign[r];
      sizes[c]++;
      const base = rows[r] * dims;
      for (let i = 0; i < dims; i++) sums[c * dims + i] += data[base + i];
    }
    for (let c = 0; c < k; c++) {
      if (sizes[c] === 0) {
        // An empty cluster takes a random row as its new seed.
        const r = rows[Math.floor(rand() * n)];
        centroids.set(data.subarray(r * dims, r * dims + dims), c * dims);
        continue;
      }
      let norm = 0;
      for (let i = 0; i < dims; i++) norm += sums[c * dims + i] ** 2;
      norm = Math.sqrt(norm) || 1;
      for (let i = 0; i < dims; i++) centroids[c * dims + i] = sums[c * dims + i] / norm;
    }
  }
  return centroids;
}

/** The trained centroids: coarse, and the lists' (grouped by coarse centroid). */
export interface IvfCentroids {
  dims: number;
  coarse: Float32Array;
  lists: Float32Array;
  /** Lists of coarse centroid c: [coarseStart[c], coarseStart[c + 1]). */
  coarseStart: Int32Array;
}

/** Trains the two-level centroids on a sample of the source's vectors. */
export function trainCentroids(source: TrainingSource, lists: number, seed = 1): IvfCentroids {
  return runSteps(trainCentroidsSteps(source, lists, seed));
}

/**
 * `trainCentroids` in steps: it yields every ROWS_PER_STEP rows of work. The source's vectors
 * are read only before the first yield (the sample is copied), so they may move afterwards.
 */
export function* trainCentroidsSteps(source: TrainingSource, lists: number, seed = 1): Generator<void, IvfCentroids> {
  const { dims, stride } = source;
  const rand = rng(seed);
  const n = source.slots.length;
  const L = Math.max(1, Math.min(lists, n));
  const sampleSize = Math.min(n, Math.max(L * 32, 2048));
  // A sample of slots (partial Fisher-Yates), as unit floats.
  const pool = Int32Array.from(source.slots);
  for (let i = 0; i < sampleSize; i++) {
    const j = i + Math.floor(rand() * (n - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const data = new Float32Array(sampleSize * dims);
  // The sample's int8 rows too (the vectors are not read after this loop).
  const sample8 = new Int8Array(sampleSize * stride);
  for (let r = 0; r < sampleSize; r++) {
    const base = pool[r] * stride;
    sample8.set(source.vectors.subarray(base, base + stride), r * stride);
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += source.vectors[base + i] ** 2;
    norm = Math.sqrt(norm) || 1;
    for (let i = 0; i < dims; i++) data[r * dims + i] = source.vectors[base + i] / norm;
  }
  const all = Int32Array.from({ length: sampleSize }, (_, i) => i);
  const C = Math.max(1, Math.min(Math.round(Math.sqrt(L)), sampleSize));
  const coarse = yield* sphericalKMeans(data, dims, stride, source.queryMax, all, C, 8, rand);
  const coarseCount = coarse.length / dims;
  // Each sample row's coarse centroid.
  const table = new CentroidTable(coarse, dims, stride);
  const q = table.query();
  const members: number[][] = Array.from({ length: coarseCount }, () => []);
  const scale = Math.floor(source.queryMax / 127);
  for (let r = 0; r < sampleSize; r++) {
    const base = r * stride;
    for (let i = 0; i < dims; i++) q[i] = sample8[base + i] * scale;
    table.score(0, coarseCount);
    members[table.best(0, coarseCount)].push(r);
    if (r % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  const fine: Float32Array[] = [];
  const coarseStart = new Int32Array(coarseCount + 1);
  let total = 0;
  for (let c = 0; c < coarseCount; c++) {
    coarseStart[c] = total;
    const rows = Int32Array.from(members[c]);
    if (rows.length === 0) {
      fine.push(coarse.slice(c * dims, c * dims + dims)); // one list at the coarse centroid
      total++;
      continue;
    }
    const k = Math.max(1, Math.round((L * rows.length) / sampleSize));
    const cs = yield* sphericalKMeans(data, dims, stride, source.queryMax, rows, k, 8, rand);
    yield;
    fine.push(cs);
    total += cs.length / dims;
  }
  coarseStart[coarseCount] = total;
  const listFloats = new Float32Array(total * dims);
  let at = 0;
  for (const f of fine) {
    listFloats.set(f, at);
    at += f.length;
  }
  return { dims, coarse, lists: listFloats, coarseStart };
}

/**
 * Lists of slots by nearest centroid. Slots are the slab's; the index grows its per-slot
 * arrays as the slab grows.
 */
export class IvfIndex {
  readonly centroids: IvfCentroids;
  private readonly coarseTable: CentroidTable;
  private readonly listTable: CentroidTable;
  private readonly coarseCount: number;
  readonly listCount: number;
  private listOf: Int32Array = new Int32Array(0);
  private posOf: Int32Array = new Int32Array(0);
  private readonly members: Int32Array[];
  /** Each member's document, beside it (a search reads its scope's mask without touching the slab's per-slot arrays). */
  private readonly memberDocs: Int32Array[];
  private readonly sizes: Int32Array;
  private zero: Int32Array = new Int32Array(16);
  private zeroDocs: Int32Array = new Int32Array(16);
  private zeroSize = 0;
  private held = 0;
  /** Read from a file rather than trained here. */
  restored = false;
  /** Read from an older file, the rows written since assigned to their lists at the read. */
  caughtUp = false;
  /** Rows held when trained (the slab trains again when they double or fall to a quarter). */
  readonly trainedAt: number;

  constructor(
    centroids: IvfCentroids,
    private readonly stride: number,
    private readonly queryMax: number,
    trainedAt: number,
  ) {
    this.centroids = centroids;
    const { dims } = centroids;
    this.coarseTable = new CentroidTable(centroids.coarse, dims, stride);
    this.listTable = new CentroidTable(centroids.lists, dims, stride);
    this.coarseCount = this.coarseTable.count;
    this.listCount = this.listTable.count;
    this.members = Array.from({ length: this.listCount }, () => new Int32Array(8));
    this.memberDocs = Array.from({ length: this.listCount }, () => new Int32Array(8));
    this.sizes = new Int32Array(this.listCount);
    this.trainedAt = trainedAt;
  }

  /** Rows held (in a list or the vector-less one). */
  get size(): number {
    return this.held;
  }

  private ensureSlots(n: number): void {
    if (n <= this.listOf.length) return;
    let cap = Math.max(1024, this.listOf.length);
    while (cap < n) cap *= 2;
    const listOf = new Int32Array(cap).fill(-1);
    listOf.set(this.listOf);
    const posOf = new Int32Array(cap);
    posOf.set(this.posOf);
    this.listOf = listOf;
    this.posOf = posOf;
  }

  /** The nearest list of an int8 vector (two-level: the lists of its two nearest coarse centroids). */
  nearestList(vector: Int8Array): number {
    const scale = Math.floor(this.queryMax / 127);
    const qc = this.coarseTable.query();
    for (let i = 0; i < this.stride; i++) qc[i] = vector[i] * scale;
    const coarse = this.coarseTable;
    coarse.score(0, this.coarseCount);
    let first = 0;
    let second = -1;
    for (let c = 0; c < this.coarseCount; c++) {
      const s = coarse.out[c] * coarse.invScale[c];
      if (c === first) continue;
      if (s > coarse.out[first] * coarse.invScale[first]) {
        second = first;
        first = c;
      } else if (second < 0 || s > coarse.out[second] * coarse.invScale[second]) {
        second = c;
      }
    }
    const ql = this.listTable.query();
    ql.set(qc);
    const starts = this.centroids.coarseStart;
    let best = -1;
    let bestS = -Infinity;
    for (let k = 0; k < 2; k++) {
      const c = k === 0 ? first : second;
      if (c < 0) break;
      this.listTable.score(starts[c], starts[c + 1]);
      const l = this.listTable.best(starts[c], starts[c + 1]);
      const s = this.listTable.out[l] * this.listTable.invScale[l];
      if (s > bestS) {
        bestS = s;
        best = l;
      }
    }
    return best;
  }

  /** Puts a slot of document `doc` into a list (`ZERO` for a vector-less row). */
  put(slot: number, list: number, doc: number): void {
    this.ensureSlots(slot + 1);
    if (this.listOf[slot] !== -1) this.remove(slot);
    if (list === ZERO) {
      if (this.zeroSize === this.zero.length) {
        this.zero = grown(this.zero);
        this.zeroDocs = grown(this.zeroDocs);
      }
      this.posOf[slot] = this.zeroSize;
      this.zeroDocs[this.zeroSize] = doc;
      this.zero[this.zeroSize++] = slot;
    } else {
      if (this.sizes[list] === this.members[list].length) {
        this.members[list] = grown(this.members[list]);
        this.memberDocs[list] = grown(this.memberDocs[list]);
      }
      this.posOf[slot] = this.sizes[list];
      this.memberDocs[list][this.sizes[list]] = doc;
      this.members[list][this.sizes[list]++] = slot;
    }
    this.listOf[slot] = list;
    this.held++;
  }

  /** Takes a slot out of its list (no effect when it is in none). */
  remove(slot: number): void {
    if (slot >= this.listOf.length) return;
    const list = this.listOf[slot];
    if (list === -1) return;
    const pos = this.posOf[slot];
    const arr = list === ZERO ? this.zero : this.members[list];
    const docs = list === ZERO ? this.zeroDocs : this.memberDocs[list];
    const last = list === ZERO ? --this.zeroSize : --this.sizes[list];
    const moved = arr[last];
    arr[pos] = moved;
    docs[pos] = docs[last];
    this.posOf[moved] = pos;
    this.listOf[slot] = -1;
    this.held--;
  }

  /** The list a slot is in (-1: none). */
  listOfSlot(slot: number): number {
    return slot < this.listOf.length ? this.listOf[slot] : -1;
  }

  /** Vector-less rows (scored 0 by a search). */
  zeroMembers(): { slots: Int32Array; docs: Int32Array } {
    return { slots: this.zero.subarray(0, this.zeroSize), docs: this.zeroDocs.subarray(0, this.zeroSize) };
  }

  /** Lists in order of their centroid's cosine with the query (best first). */
  rankLists(query: Float32Array): Int32Array {
    let qmax = 0;
    for (let i = 0; i < query.length; i++) qmax = Math.max(qmax, Math.abs(query[i]));
    const table = this.listTable;
    const q = table.query();
    q.fill(0);
    if (qmax > 0) for (let i = 0; i < query.length; i++) q[i] = Math.round((query[i] * this.queryMax) / qmax);
    table.score(0, this.listCount);
    const scores = new Float64Array(this.listCount);
    for (let l = 0; l < this.listCount; l++) scores[l] = table.out[l] * table.invScale[l];
    const order = Int32Array.from({ length: this.listCount }, (_, i) => i);
    order.sort((a, b) => scores[b] - scores[a]);
    return order;
  }

  /** The members of list l (a view, valid until the next write). */
  list(l: number): Int32Array {
    return this.members[l].subarray(0, this.sizes[l]);
  }

  /** The documents of list l's members, in the same order (a view, valid until the next write). */
  listDocs(l: number): Int32Array {
    return this.memberDocs[l].subarray(0, this.sizes[l]);
  }
}

function grown(a: Int32Array): Int32Array {
  const next = new Int32Array(a.length * 2);
  next.set(a);
  return next;
}

// ------------------------------------------------------------------ persistence

const MAGIC = 'KBIV';
const FORMAT = 1;

/** What an index file must match for its IVF file to be used. */
export interface IvfStamp {
  generation: number;
  vectorGeneration: number;
  schema: string;
  model: string;
  dims: number;
}

interface IvfHeader extends IvfStamp {
  format: number;
  coarse: number;
  lists: number;
  rows: number;
  trainedAt: number;
}

/** Writes the centroids and each row's list (temp file, fsync, rename). */
export function writeIvf(file: string, stamp: IvfStamp, ivf: IvfIndex, rows: { rowIds: Float64Array; lists: Int32Array }): void {
  const c = ivf.centroids;
  const header: IvfHeader = {
    format: FORMAT,
    ...stamp,
    coarse: c.coarse.length / c.dims,
    lists: c.lists.length / c.dims,
    rows: rows.rowIds.length,
    trainedAt: ivf.trainedAt,
  };
  const head = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32LE(head.byteLength, 0);
  prefix.write(MAGIC, 4, 'latin1');
  const pad = (n: number): Buffer => Buffer.alloc((8 - (n % 8)) % 8);
  const bytes = (a: Float32Array | Float64Array | Int32Array): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const parts = [prefix, head, bytes(c.coarse), bytes(c.lists), bytes(c.coarseStart), bytes(rows.rowIds), bytes(rows.lists)];
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    for (const p of parts) {
      fs.writeSync(fd, p);
      const extra = pad(p.byteLength);
      if (extra.byteLength > 0) fs.writeSync(fd, extra);
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/** The contents of an IVF file carrying this stamp; undefined when missing, stale, of another format or truncated. */
/** What an IVF file holds: the centroids, each row's list, the rows trained on, and the write generation it was written at. */
export interface SavedIvf {
  centroids: IvfCentroids;
  rowIds: Float64Array;
  lists: Int32Array;
  trainedAt: number;
  generation: number;
}

/**
 * The index in `file` when it carries this stamp (with `older`: a write generation no later
 * than the stamp's, the rest equal, as after a crash that followed writes; the caller catches
 * it up); undefined when there is none, it is of another stamp, truncated or inconsistent.
 */
export function readIvf(file: string, stamp: IvfStamp, older = false): SavedIvf | undefined {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  try {
    if (bytes.byteLength < 8 || bytes.toString('latin1', 4, 8) !== MAGIC) return undefined;
    const headLength = bytes.readUInt32LE(0);
    const h = JSON.parse(bytes.toString('utf8', 8, 8 + headLength)) as IvfHeader;
    if (
      h.format !== FORMAT ||
      (older ? !(h.generation <= stamp.generation) : h.generation !== stamp.generation) ||
      h.vectorGeneration !== stamp.vectorGeneration ||
      h.schema !== stamp.schema ||
      h.model !== stamp.model ||
      h.dims !== stamp.dims
    ) {
      return undefined;
    }
    const buf = Buffer.from(bytes); // aligned copy
    let offset = 8 + headLength;
    offset += (8 - (offset % 8)) % 8;
    const take = <T>(make: (b: ArrayBuffer, o: number, n: number) => T, n: number, size: number): T => {
      if (offset + n * size > buf.byteLength) throw new Error('IVF file truncated');
      const out = make(buf.buffer as ArrayBuffer, buf.byteOffset + offset, n);
      offset += n * size;
      offset += (8 - (offset % 8)) % 8;
      return out;
    };
    const coarse = take((b, o, n) => new Float32Array(b, o, n), h.coarse * h.dims, 4);
    const lists = take((b, o, n) => new Float32Array(b, o, n), h.lists * h.dims, 4);
    const coarseStart = take((b, o, n) => new Int32Array(b, o, n), h.coarse + 1, 4);
    const rowIds = take((b, o, n) => new Float64Array(b, o, n), h.rows, 8);
    const rowLists = take((b, o, n) => new Int32Array(b, o, n), h.rows, 4);
    if (offset !== buf.byteLength) return undefined;
    if (coarseStart[0] !== 0 || coarseStart[h.coarse] !== h.lists) return undefined;
    for (let c = 0; c < h.coarse; c++) if (coarseStart[c + 1] < coarseStart[c]) return undefined;
    for (let i = 0; i < h.rows; i++) if (rowLists[i] !== ZERO && (rowLists[i] < 0 || rowLists[i] >= h.lists)) return undefined;
    return { centroids: { dims: h.dims, coarse, lists, coarseStart }, rowIds, lists: rowLists, trainedAt: h.trainedAt, generation: h.generation };
  } catch {
    return undefined;
  }
}
