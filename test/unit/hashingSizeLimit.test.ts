import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HashingSizeLimit } from '../../src/adapters/mongodb/hashingSizeLimit';
import { BlobTooLargeError } from '../../src/ports/blobStore';

function sink(): { stream: Writable; bytes: () => Buffer } {
  const parts: Buffer[] = [];
  return { stream: new Writable({ write: (c: Buffer, _e, cb) => (parts.push(c), cb()) }), bytes: () => Buffer.concat(parts) };
}

describe('HashingSizeLimit', () => {
  it('passes bytes through and reports their SHA-256 and size', async () => {
    const parts = [Buffer.from('hello '), 'world', Buffer.alloc(1000, 7)];
    const meter = new HashingSizeLimit(2000);
    const out = sink();
    await pipeline(Readable.from(parts), meter, out.stream);
    const all = Buffer.concat([Buffer.from('hello '), Buffer.from('world'), Buffer.alloc(1000, 7)]);
    expect(out.bytes().equals(all)).toBe(true);
    expect(meter.size).toBe(all.length);
    expect(meter.digest()).toBe(createHash('sha256').update(all).digest('hex'));
  });

  it('accepts exactly maxBytes and fails with BlobTooLargeError past it', async () => {
    await pipeline(Readable.from([Buffer.alloc(10)]), new HashingSizeLimit(10), sink().stream);
    const out = sink();
    const err = await pipeline(Readable.from([Buffer.alloc(6), Buffer.alloc(5)]), new HashingSizeLimit(10), out.stream).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobTooLargeError);
    expect((err as BlobTooLargeError).maxBytes).toBe(10);
    expect(out.bytes().length).toBe(6); // nothing past the limit was passed on
  });
});
