import { FileHandle, open } from 'node:fs/promises';
import { inflateRawSync } from 'node:zlib';

/**
 * Bounded reading of ZIP packages (.docx). Libraries that open a ZIP (mammoth through JSZip)
 * inflate every entry they are asked for, as big as it turns out to be, into buffers outside
 * the JS heap that a worker's heap limit does not cover. So the package is read here: the
 * central directory first (entry count and declared sizes checked before anything is
 * inflated), then each entry inflated only on demand, with the output capped by both its
 * declared size and what is left of the budget (zlib's `maxOutputLength`), because the sizes
 * a ZIP declares can lie.
 */

export interface ZipDirectoryEntry {
  name: string;
  /** 0 stored, 8 deflated; anything else is refused when read. */
  method: number;
  flags: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

export interface ZipLimits {
  /** Sum of the uncompressed sizes of the entries read (declared and actual). */
  maxBytes: number;
  /** Entries in the central directory. */
  maxEntries: number;
}

/** Why a package cannot be read: a bound was passed (`entries`, `bytes`), or it is not a readable ZIP (`corrupt`). */
export class ZipPackageError extends Error {
  constructor(
    readonly kind: 'entries' | 'bytes' | 'corrupt',
    message: string,
  ) {
    super(message);
    this.name = 'ZipPackageError';
  }
}

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const MAX_CENTRAL_DIRECTORY = 16 * 1024 * 1024;

async function readAt(fh: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, position);
  return bytesRead === length ? buf : buf.subarray(0, bytesRead);
}

/** ZIP64 extended sizes/offset of a central directory entry, where the 32-bit fields are saturated. */
function zip64Fields(extra: Buffer, e: ZipDirectoryEntry): void {
  let p = 0;
  while (p + 4 <= extra.length) {
    const id = extra.readUInt16LE(p);
    const len = extra.readUInt16LE(p + 2);
    if (id === 0x0001) {
      let q = p + 4;
      const take = (): number => {
        if (q + 8 > p + 4 + len) throw new ZipPackageError('corrupt', 'a ZIP64 field is truncated');
        const v = Number(extra.readBigUInt64LE(q));
        q += 8;
        return v;
      };
      if (e.uncompressedSize === 0xffffffff) e.uncompressedSize = take();
      if (e.compressedSize === 0xffffffff) e.compressedSize = take();
      if (e.localHeaderOffset === 0xffffffff) e.localHeaderOffset = take();
      return;
    }
    p += 4 + len;
  }
}

/**
 * The central directory of an open ZIP file, or undefined when the file has no readable one.
 * With `maxEntries`, a directory with more entries throws ZipPackageError('entries') before
 * they are parsed.
 */
export async function readZipDirectory(fh: FileHandle, maxEntries = Infinity): Promise<ZipDirectoryEntry[] | undefined> {
  const { size } = await fh.stat();
  if (size < 22) return undefined;
  const tailLen = Math.min(size, 22 + 0xffff + 20);
  const tail = await readAt(fh, tailLen, size - tailLen);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return undefined;
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  if ((count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) && eocd >= 20 && tail.readUInt32LE(eocd - 20) === ZIP64_LOCATOR_SIG) {
    const z64 = await readAt(fh, 56, Number(tail.readBigUInt64LE(eocd - 20 + 8)));
    if (z64.length < 56 || z64.readUInt32LE(0) !== ZIP64_EOCD_SIG) return undefined;
    count = Number(z64.readBigUInt64LE(32));
    cdSize = Number(z64.readBigUInt64LE(40));
    cdOffset = Number(z64.readBigUInt64LE(48));
  }
  // The declared count is checked first; the walk below also stops at the bound, so a
  // directory that under-declares its count cannot get past it either.
  if (count > maxEntries) throw new ZipPackageError('entries', `the package has ${count} entries, more than the ${maxEntries} allowed`);
  if (cdSize > MAX_CENTRAL_DIRECTORY || cdOffset + cdSize > size) return undefined;
  const cd = await readAt(fh, cdSize, cdOffset);
  const entries: ZipDirectoryEntry[] = [];
  let p = 0;
  while (p + 46 <= cd.length && cd.readUInt32LE(p) === CEN_SIG) {
    if (entries.length >= maxEntries) throw new ZipPackageError('entries', `the package has more than the ${maxEntries} entries allowed`);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const e: ZipDirectoryEntry = {
      name: cd.toString('utf8', p + 46, p + 46 + nameLen),
      flags: cd.readUInt16LE(p + 8),
      method: cd.readUInt16LE(p + 10),
      compressedSize: cd.readUInt32LE(p + 20),
      uncompressedSize: cd.readUInt32LE(p + 24),
      localHeaderOffset: cd.readUInt32LE(p + 42),
    };
    zip64Fields(cd.subarray(p + 46 + nameLen, p + 46 + nameLen + extraLen), e);
    entries.push(e);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** Entry names of a ZIP file's central directory, or undefined when it is not a readable ZIP. */
export async function zipEntryNames(filePath: string): Promise<string[] | undefined> {
  const fh = await open(filePath, 'r');
  try {
    return (await readZipDirectory(fh))?.map((e) => e.name);
  } finally {
    await fh.close();
  }
}

/** An opened package: entries are inflated on demand within the budget. Close it when done. */
export interface BoundedZip {
  exists(name: string): boolean;
  read(name: string): Promise<Buffer>;
  close(): Promise<void>;
}

/**
 * Opens a ZIP package under `limits`: throws ZipPackageError ('entries', 'bytes') when the central
 * directory lists too many entries or declares more uncompressed bytes than the budget, and
 * ('corrupt') when there is no readable directory. Each `read` inflates one entry with its
 * output capped at min(declared size, budget left): an entry that inflates to more than it
 * declared is refused as soon as the cap is reached, before the excess is held anywhere.
 */
export async function openBoundedZip(filePath: string, limits: ZipLimits): Promise<BoundedZip> {
  const fh = await open(filePath, 'r');
  try {
    const { size: fileSize } = await fh.stat();
    const entries = await readZipDirectory(fh, limits.maxEntries);
    if (!entries) throw new ZipPackageError('corrupt', 'its ZIP structure cannot be read');
    const byName = new Map<string, ZipDirectoryEntry>();
    let declared = 0;
    for (const e of entries) {
      declared += e.uncompressedSize;
      byName.set(e.name, e);
    }
    if (declared > limits.maxBytes) {
      throw new ZipPackageError('bytes', `the package declares ${declared} bytes uncompressed, more than the ${limits.maxBytes} allowed`);
    }
    let used = 0;
    const inflated = new Map<string, Buffer>();
    return {
      exists: (name) => byName.has(name),
      read: async (name) => {
        const cached = inflated.get(name);
        if (cached) return cached;
        const e = byName.get(name);
        if (!e) throw new ZipPackageError('corrupt', `the package has no entry ${name}`);
        if (e.flags & 0x1) throw new ZipPackageError('corrupt', `the entry ${name} is encrypted`);
        const budget = limits.maxBytes - used;
        if (e.uncompressedSize > budget) {
          throw new ZipPackageError('bytes', `the package inflates to more than the ${limits.maxBytes} bytes allowed`);
        }
        const local = await readAt(fh, 30, e.localHeaderOffset);
        if (local.length < 30 || local.readUInt32LE(0) !== LOC_SIG) throw new ZipPackageError('corrupt', `the entry ${name} has no local header`);
        const dataStart = e.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
        if (dataStart + e.compressedSize > fileSize) throw new ZipPackageError('corrupt', `the entry ${name} runs past the end of the file`);
        const raw = await readAt(fh, e.compressedSize, dataStart);
        let data: Buffer;
        if (e.method === 0) {
          data = raw;
        } else if (e.method === 8) {
          try {
            // One byte over the declared size is enough to know the header lied.
            data = inflateRawSync(raw, { maxOutputLength: Math.max(1, Math.min(e.uncompressedSize + 1, budget + 1)) });
          } catch (err) {
            if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
              throw new ZipPackageError('bytes', `the entry ${name} inflates to more than the ${e.uncompressedSize} bytes it declares`);
            }
            throw new ZipPackageError('corrupt', `the entry ${name} cannot be inflated (${(err as Error).message})`);
          }
        } else {
          throw new ZipPackageError('corrupt', `the entry ${name} uses an unsupported compression method (${e.method})`);
        }
        if (data.length !== e.uncompressedSize) {
          throw new ZipPackageError(data.length > e.uncompressedSize ? 'bytes' : 'corrupt', `the entry ${name} inflates to ${data.length} bytes but declares ${e.uncompressedSize}`);
        }
        used += data.length;
        inflated.set(name, data);
        return data;
      },
      close: () => fh.close(),
    };
  } catch (err) {
    await fh.close();
    throw err;
  }
}
