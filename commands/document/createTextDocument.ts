import { Readable } from 'node:stream';
import { DomainError } from '../../src/domain/errors';
import { Purpose } from '../../src/domain/document/events';
import { BlobTooLargeError } from '../../src/ports/blobStore';
import { MIME_TYPES } from '../../src/processing/detectType';
import { DocumentActor } from './documentCommand';
import { UploadDocumentPorts, uploadDocument, UploadedDocument } from './uploadDocument';

export type TextFormat = 'markdown' | 'text';

export interface TextDocumentInput {
  title: string;
  /** Decoded at the edge (valid Unicode, no control characters but tab and line breaks). */
  content: string;
  format: TextFormat;
  /** Absent: the workspace's default purpose. */
  purpose?: Purpose;
  tags: string[];
}

/** Characters no file name should carry (path separators, reserved on Windows); controls are refused with the title. */
const UNSAFE_IN_FILENAME = /[/\\:*?"<>|]+/g;

/** A file name for text a client sent: the title made safe, with the format's extension. */
export function textFilename(title: string, format: TextFormat): string {
  const ext = format === 'markdown' ? '.md' : '.txt';
  const visible = Array.from(title, (c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? '_' : c)).join('');
  const base = Array.from(visible.replace(UNSAFE_IN_FILENAME, '_').replace(/^[.\s]+|[.\s]+$/g, '')).slice(0, 120).join('') || 'document';
  return base.toLowerCase().endsWith(ext) ? base : `${base}${ext}`;
}

/**
 * A document from text (agents and scripts writing knowledge): the text is stored as a
 * file like any upload (a .md or .txt blob, same size limit), then UploadDocument runs
 * exactly as for an uploaded file: same events, same tag and purpose rules, same processing.
 */
export async function createTextDocument(
  ports: UploadDocumentPorts & { maxUploadBytes: number },
  input: { actor: DocumentActor; text: TextDocumentInput },
): Promise<UploadedDocument> {
  const { text } = input;
  const bytes = Buffer.from(text.content, 'utf8');
  if (bytes.length === 0 || text.content.trim() === '') throw new DomainError('VALIDATION_ERROR', 'Invalid request: content: must not be blank', { fields: [{ field: 'content', problem: 'must not be blank' }] });
  if (bytes.length > ports.maxUploadBytes) {
    throw new DomainError('FILE_TOO_LARGE', `The content exceeds the upload limit of ${ports.maxUploadBytes} bytes.`, { maxBytes: ports.maxUploadBytes });
  }
  let blob;
  try {
    blob = await ports.blobStore.put(Readable.from([bytes]), ports.maxUploadBytes);
  } catch (err) {
    if (err instanceof BlobTooLargeError) throw new DomainError('FILE_TOO_LARGE', `The content exceeds the upload limit of ${ports.maxUploadBytes} bytes.`, { maxBytes: ports.maxUploadBytes });
    throw err;
  }
  const kind = text.format === 'markdown' ? 'md' : 'txt';
  return uploadDocument(ports, {
    actor: input.actor,
    upload: { blob, kind, mimeType: MIME_TYPES[kind], filename: textFilename(text.title, text.format), title: text.title, purpose: text.purpose, tags: text.tags },
  });
}
