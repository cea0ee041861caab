import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DETECT_HEAD_BYTES, detectType, InvalidFileTypeError, MIME_TYPES, readHead, zipEntryNames } from '../../src/processing/detectType';

const fixture = (name: string): string => path.join(__dirname, '..', 'fixtures', name);

async function detectFile(filePath: string, filename = path.basename(filePath)) {
  const head = await readHead(filePath);
  const { size } = await import('node:fs/promises').then((fs) => fs.stat(filePath));
  return detectType({ filename, head, size, filePath });
}

async function rejection(p: Promise<unknown>): Promise<InvalidFileTypeError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidFileTypeError);
    return err as InvalidFileTypeError;
  }
  throw new Error('expected a rejection');
}

describe('detectType', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-detect-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const write = async (name: string, data: Buffer | string): Promise<string> => {
    const p = path.join(dir, name);
    await writeFile(p, data);
    return p;
  };

  it.each([
    ['sample.pdf', 'pdf'],
    ['sample.docx', 'docx'],
    ['sample.doc', 'doc'],
    ['sample.txt', 'txt'],
    ['sample.md', 'md'],
    ['empty.txt', 'txt'],
    ['scanned.pdf', 'pdf'],
    ['encrypted.pdf', 'pdf'],
  ] as const)('accepts %s as %s with its MIME type', async (name, kind) => {
    await expect(detectFile(fixture(name))).resolves.toEqual({ kind, mimeType: MIME_TYPES[kind] });
  });

  it('judges the extension case-insensitively', async () => {
    await expect(detectFile(fixture('sample.pdf'), 'REPORT.PDF')).resolves.toMatchObject({ kind: 'pdf', mimeType: 'application/pdf' });
  });

  it('rejects random bytes named .pdf, naming what was expected', async () => {
    const err = await rejection(detectFile(fixture('random.pdf')));
    expect(err.code).toBe('INVALID_FILE_TYPE');
    expect(err.reason).toBe('CONTENT_MISMATCH');
    expect(err.message).toMatch(/named \.pdf but its content is not a PDF/);
  });

  it('rejects a Word document renamed .pdf, saying what it is', async () => {
    const err = await rejection(detectFile(fixture('sample.docx'), 'x.pdf'));
    expect(err.message).toMatch(/content is a ZIP archive/);
  });

  it('rejects an executable renamed .txt', async () => {
    const exe = Buffer.alloc(512);
    exe.write('MZ', 0, 'latin1');
    exe.write('This program cannot be run in DOS mode.', 78, 'latin1');
    const err = await rejection(detectFile(await write('setup.txt', exe)));
    expect(err.reason).toBe('NOT_TEXT');
    expect(err.message).toMatch(/Windows executable/);
  });

  it('rejects NUL bytes and invalid UTF-8 in .md/.txt', async () => {
    const nul = await write('nul.md', Buffer.from('# a\u0000b'));
    expect((await rejection(detectFile(nul))).message).toMatch(/NUL bytes/);
    const latin1 = await write('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x21]));
    expect((await rejection(detectFile(latin1))).message).toMatch(/not valid UTF-8/);
    const u16 = await write('u16.txt', Buffer.from('\ufeffhi', 'utf16le'));
    expect((await rejection(detectFile(u16))).message).toMatch(/UTF-16/);
  });

  it('rejects a PDF renamed .txt even when its first bytes are ASCII', async () => {
    const err = await rejection(detectFile(fixture('sample.pdf'), 'notes.txt'));
    expect(err.message).toMatch(/content is a PDF/);
  });

  it('accepts a UTF-8 BOM and a multi-byte character cut at the end of the head', async () => {
    const text = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('é'.repeat(DETECT_HEAD_BYTES))]);
    const p = await write('long.txt', text);
    const head = await readHead(p);
    expect(head.length).toBe(DETECT_HEAD_BYTES);
    // 8192 - 3 BOM bytes = odd number of bytes of two-byte characters: the last one is cut
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(3))).toThrow();
    await expect(detectType({ filename: 'long.txt', head, size: text.length })).resolves.toMatchObject({ kind: 'txt' });
    // ...but a file that really ends mid-character is not valid UTF-8
    await rejection(detectType({ filename: 'long.txt', head, size: head.length }));
  });

  it('rejects a ZIP without word/document.xml named .docx, from the central directory', async () => {
    expect(await zipEntryNames(fixture('not-word.docx'))).toEqual(['readme.txt', 'data/x.xml']);
    const err = await rejection(detectFile(fixture('not-word.docx')));
    expect(err.message).toMatch(/without word\/document\.xml/);
    expect(await zipEntryNames(fixture('sample.docx'))).toContain('word/document.xml');
  });

  it('without the file on disk, judges a .docx from the local headers in the head', async () => {
    const head = (await readFile(fixture('not-word.docx'))).subarray(0, 200);
    await rejection(detectType({ filename: 'a.docx', head }));
  });

  it('rejects an OLE2 check failure for .doc and a truncated ZIP for .docx', async () => {
    expect((await rejection(detectFile(fixture('sample.txt'), 'old.doc'))).message).toMatch(/not a Word 97-2003 document/);
    const zip = await readFile(fixture('sample.docx'));
    const cut = await write('cut.docx', zip.subarray(0, 1000));
    expect((await rejection(detectFile(cut))).message).toMatch(/ZIP structure cannot be read/);
  });

  it.each(['photo.png', 'archive.zip', 'README', 'script.exe', 'page.html'])('rejects the unsupported name %s', async (name) => {
    const err = await rejection(detectType({ filename: name, head: Buffer.from('hello') }));
    expect(err.reason).toBe('UNSUPPORTED_EXTENSION');
    expect(err.message).toMatch(/supported: \.pdf, \.docx, \.doc, \.txt, \.md/);
  });

  it('rejects an empty file named .pdf', async () => {
    const err = await rejection(detectType({ filename: 'a.pdf', head: Buffer.alloc(0), size: 0 }));
    expect(err.reason).toBe('CONTENT_MISMATCH');
  });
});
