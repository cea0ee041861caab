import { once } from 'node:events';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';

/**
 * A tiny ZIP writer for hostile fixtures built at run time (zip bombs, lying headers,
 * too many entries): nothing this size needs to live in the repository.
 */

export interface ZipEntry {
  name: string;
  /** Deflated bytes (method 8). */
  deflated: Buffer;
  /** Uncompressed size written in the headers (may lie). */
  size: number;
  crc: number;
}

/** An entry from its uncompressed bytes. */
export function entry(name: string, data: Buffer | string): ZipEntry {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return { name, deflated: deflateRawSync(buf), size: buf.length, crc: crc32(buf) };
}

/**
 * An entry of `prefix`, then `fillBytes` bytes of `fill`, then `suffix`, deflated in a
 * stream: a gigabyte of padding costs about a megabyte of memory and output.
 */
export async function paddedEntry(name: string, prefix: string, fill: string, fillBytes: number, suffix: string): Promise<ZipEntry> {
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (d: Buffer) => out.push(d));
  const ended = once(deflate, 'end');
  let crc = 0;
  let size = 0;
  const write = async (chunk: Buffer): Promise<void> => {
    crc = crc32(chunk, crc);
    size += chunk.length;
    if (!deflate.write(chunk)) await once(deflate, 'drain');
  };
  await write(Buffer.from(prefix, 'utf8'));
  const block = Buffer.alloc(1024 * 1024, fill);
  for (let left = fillBytes; left > 0; left -= block.length) await write(left >= block.length ? block : block.subarray(0, left));
  await write(Buffer.from(suffix, 'utf8'));
  deflate.end();
  await ended;
  return { name, deflated: Buffer.concat(out), size, crc };
}

/** A ZIP file of deflated entries (no ZIP64, no data descriptors). */
export function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(e.crc >>> 0, 14);
    local.writeUInt32LE(e.deflated.length, 18);
    local.writeUInt32LE(e.size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const cen = Buffer.alloc(46);
    cen.writeUInt32LE(0x02014b50, 0);
    cen.writeUInt16LE(20, 4); // version made by
    cen.writeUInt16LE(20, 6);
    cen.writeUInt16LE(0x0800, 8);
    cen.writeUInt16LE(8, 10);
    cen.writeUInt32LE(0, 12);
    cen.writeUInt32LE(e.crc >>> 0, 16);
    cen.writeUInt32LE(e.deflated.length, 20);
    cen.writeUInt32LE(e.size, 24);
    cen.writeUInt16LE(name.length, 28);
    cen.writeUInt32LE(offset, 42);
    locals.push(local, name, e.deflated);
    central.push(cen, name);
    offset += local.length + name.length + e.deflated.length;
  }
  const cd = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, eocd]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';
const RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';
const DOC_OPEN =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
const DOC_CLOSE = '</w:body></w:document>';

/** The minimal parts of a .docx around a given `word/document.xml` entry. */
export function docx(documentXml: ZipEntry, extra: ZipEntry[] = []): Buffer {
  return zip([entry('[Content_Types].xml', CONTENT_TYPES), entry('_rels/.rels', RELS), documentXml, ...extra]);
}

/** `word/document.xml` whose body is the given XML. */
export function documentBody(bodyXml: string): ZipEntry {
  return entry('word/document.xml', `${DOC_OPEN}${bodyXml}${DOC_CLOSE}`);
}

/** `word/document.xml` with one paragraph of `text`. */
export function documentXml(text: string): ZipEntry {
  return documentBody(`<w:p><w:r><w:t>${text}</w:t></w:r></w:p>`);
}

/**
 * A .docx whose `word/document.xml` inflates to about `bytes` bytes: one paragraph of text,
 * then an XML comment of spaces (valid XML, no text) that compresses about 1000:1.
 * `declaredSize` makes its headers claim that size instead.
 */
export async function docxBomb(bytes: number, text = 'Tiny visible text.', options: { declaredSize?: number } = {}): Promise<Buffer> {
  const xml = await paddedEntry('word/document.xml', `${DOC_OPEN}<w:p><w:r><w:t>${text}</w:t></w:r></w:p><!--`, ' ', bytes, `-->${DOC_CLOSE}`);
  // A lying bomb declares a harmless size in its headers.
  return docx(options.declaredSize === undefined ? xml : { ...xml, size: options.declaredSize });
}
