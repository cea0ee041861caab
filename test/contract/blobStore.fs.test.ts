import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobNotFoundError, FsBlobStore } from '../../src/adapters/fs/fsBlobStore';
import { BlobStore, BlobTooLargeError } from '../../src/ports/blobStore';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function readAll(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** A stream of `total` bytes in `chunk`-sized pieces, generated on demand; counts what was pulled. */
function generated(total: number, chunk = 64 * 1024): Readable & { pulled: () => number } {
  let sent = 0;
  const r = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const n = Math.min(chunk, total - sent);
      const b = Buffer.alloc(n, sent % 251);
      sent += n;
      this.push(b);
    },
  }) as Readable & { pulled: () => number };
  r.pulled = () => sent;
  return r;
}

/** Contract every BlobStore adapter must meet; run here against FsBlobStore. */
function blobStoreContract(name: string, make: () => Promise<{ store: BlobStore; cleanup: () => Promise<void> }>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let store: BlobStore;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await make());
    });
    afterEach(async () => cleanup());

    it('stores content under its sha256 and reads it back', async () => {
      const data = Buffer.from('hello blob store\n');
      const stored = await store.put(Readable.from([data]), 1024);
      expect(stored).toEqual({ sha256: sha(data), size: data.length });
      expect(await store.exists(stored.sha256)).toBe(true);
      expect(await readAll(await store.get(stored.sha256))).toEqual(data);
    });

    it('streams multi-chunk content and hashes it on the fly', async () => {
      const chunks = [Buffer.from('part one, '), Buffer.from('part two, '), Buffer.from('part three')];
      const stored = await store.put(Readable.from(chunks), 1024);
      const all = Buffer.concat(chunks);
      expect(stored).toEqual({ sha256: sha(all), size: all.length });
      expect(await readAll(await store.get(stored.sha256))).toEqual(all);
    });

    it('stores an empty file', async () => {
      const stored = await store.put(Readable.from([]), 10);
      expect(stored).toEqual({ sha256: sha(Buffer.alloc(0)), size: 0 });
      expect(await readAll(await store.get(stored.sha256))).toEqual(Buffer.alloc(0));
    });

    it('same content, same address (dedupe)', async () => {
      const data = Buffer.from('same bytes');
      const a = await store.put(Readable.from([data]), 100);
      const b = await store.put(Readable.from([Buffer.from('same '), Buffer.from('bytes')]), 100);
      expect(b).toEqual(a);
      const [c, d] = await Promise.all([store.put(Readable.from([data]), 100), store.put(Readable.from([data]), 100)]);
      expect(c).toEqual(a);
      expect(d).toEqual(a);
      expect(await readAll(await store.get(a.sha256))).toEqual(data);
    });

    it('accepts exactly maxBytes and rejects one byte more with BlobTooLargeError', async () => {
      const ok = await store.put(Readable.from([Buffer.alloc(100, 1)]), 100);
      expect(ok.size).toBe(100);
      const tooBig = Buffer.alloc(101, 2);
      const err = await store.put(Readable.from([tooBig]), 100).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlobTooLargeError);
      expect((err as BlobTooLargeError).maxBytes).toBe(100);
      expect(await store.exists(sha(tooBig))).toBe(false);
    });

    it('stops reading a too-large source early instead of consuming it', async () => {
      const source = generated(50 * 1024 * 1024);
      await expect(store.put(source, 1024 * 1024)).rejects.toBeInstanceOf(BlobTooLargeError);
      expect(source.pulled()).toBeLessThan(4 * 1024 * 1024);
      expect(source.destroyed).toBe(true);
    });

    it('a failing source leaves nothing behind', async () => {
      const failing = new Readable({
        read() {
          this.push(Buffer.from('some data'));
          this.destroy(new Error('client went away'));
        },
      });
      await expect(store.put(failing, 1000)).rejects.toThrow('client went away');
    });

    it('get of a missing blob rejects; exists is false; delete is idempotent', async () => {
      const missing = sha(Buffer.from('never stored'));
      expect(await store.exists(missing)).toBe(false);
      await expect(store.get(missing)).rejects.toThrow();
      await expect(store.delete(missing)).resolves.toBe(true);
    });

    it('delete removes the blob once its put released it', async () => {
      const stored = await store.put(Readable.from([Buffer.from('to delete')]), 100);
      store.release(stored.sha256);
      expect(await store.delete(stored.sha256)).toBe(true);
      expect(await store.exists(stored.sha256)).toBe(false);
      await expect(store.get(stored.sha256)).rejects.toThrow();
    });

    it('a blob held by a put (an upload not yet recorded) is not deleted until every put of it released it', async () => {
      const bytes = Buffer.from('held by two uploads');
      const first = await store.put(Readable.from([bytes]), 100);
      const second = await store.put(Readable.from([bytes]), 100);
      store.release(first.sha256);
      await store.delete(first.sha256);
      expect(await store.exists(first.sha256)).toBe(true);
      store.release(second.sha256);
      await store.delete(first.sha256);
      expect(await store.exists(first.sha256)).toBe(false);
      // A put of the bytes again stores them again.
      const third = await store.put(Readable.from([bytes]), 100);
      expect(await readAll(await store.get(third.sha256))).toEqual(bytes);
      store.release(third.sha256);
    });

    it('a deletion asked for while the blob is held happens at the last release if its check still says unused', async () => {
      const gone = async (sha256: string): Promise<boolean> => {
        for (let i = 0; i < 100 && (await store.exists(sha256)); i++) await new Promise((r) => setTimeout(r, 5));
        return !(await store.exists(sha256));
      };
      const a = await store.put(Readable.from([Buffer.from('deferred, unused')]), 100);
      expect(await store.delete(a.sha256, { stillUnused: async () => true })).toBe(false); // held: left to the release
      expect(await store.exists(a.sha256)).toBe(true);
      store.release(a.sha256);
      expect(await gone(a.sha256)).toBe(true);
      // Used by then (the holding upload recorded its document): it stays.
      const b = await store.put(Readable.from([Buffer.from('deferred, used')]), 100);
      await store.delete(b.sha256, { stillUnused: async () => false });
      store.release(b.sha256);
      await new Promise((r) => setTimeout(r, 20));
      expect(await store.exists(b.sha256)).toBe(true);
    });

    it('refuses addresses that are not sha256 hex digests', async () => {
      await expect(store.get('../../etc/passwd')).rejects.toThrow(TypeError);
      await expect(store.exists('ABC')).rejects.toThrow(TypeError);
      await expect(store.delete(`${'a'.repeat(63)}/`)).rejects.toThrow(TypeError);
    });
  });
}

describe('FsBlobStore', () => {
  let dir: string;
  const make = async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-blobs-'));
    return { store: new FsBlobStore(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
  };

  blobStoreContract('FsBlobStore', make);

  describe('layout and cleanup', () => {
    let store: FsBlobStore;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      const made = await make();
      store = made.store;
      cleanup = made.cleanup;
    });
    afterEach(async () => cleanup());

    const tempFiles = async () => readdir(path.join(dir, '.tmp')).catch(() => [] as string[]);

    it('keeps blobs at <dir>/ab/cdef... and exposes the local path', async () => {
      const data = Buffer.from('layout');
      const { sha256 } = await store.put(Readable.from([data]), 100);
      const p = store.localPath(sha256);
      expect(p).toBe(path.join(dir, sha256.slice(0, 2), sha256.slice(2)));
      expect(await readFile(p)).toEqual(data);
      expect(() => store.localPath('nope')).toThrow(TypeError);
    });

    it('leaves no temp files after success, dedupe, too-large and source failure', async () => {
      await store.put(Readable.from([Buffer.from('x')]), 10);
      await store.put(Readable.from([Buffer.from('x')]), 10);
      await store.put(Readable.from([Buffer.alloc(11)]), 10).catch(() => undefined);
      const failing = new Readable({
        read() {
          this.destroy(new Error('boom'));
        },
      });
      await store.put(failing, 10).catch(() => undefined);
      expect(await tempFiles()).toEqual([]);
      // and only the one blob directory besides .tmp
      const entries = (await readdir(dir)).filter((e) => e !== '.tmp');
      expect(entries).toHaveLength(1);
    });

    it('get on a missing blob rejects with BlobNotFoundError', async () => {
      await expect(store.get('0'.repeat(64))).rejects.toBeInstanceOf(BlobNotFoundError);
    });

    it('writes a multi-megabyte generated stream in full', async () => {
      const size = 8 * 1024 * 1024 + 17;
      const stored = await store.put(generated(size), size);
      expect(stored.size).toBe(size);
      expect((await stat(store.localPath(stored.sha256))).size).toBe(size);
    });

    it('removeStaleTempFiles removes leftovers older than the cutoff only', async () => {
      const { writeFile, utimes, mkdir } = await import('node:fs/promises');
      await mkdir(path.join(dir, '.tmp'), { recursive: true });
      const old = path.join(dir, '.tmp', 'old.part');
      const fresh = path.join(dir, '.tmp', 'fresh.part');
      await writeFile(old, 'x');
      await writeFile(fresh, 'y');
      const past = new Date(Date.now() - 2 * 60 * 60 * 1000);
      await utimes(old, past, past);
      expect(await store.removeStaleTempFiles(60 * 60 * 1000)).toBe(1);
      expect(await tempFiles()).toEqual(['fresh.part']);
    });
  });
});
