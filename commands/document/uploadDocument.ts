import { randomUUID } from 'node:crypto';
import { CommandPorts } from '../../src/core/executeCommand';
import { DomainError } from '../../src/domain/errors';
import { DocumentCommand } from '../../src/domain/document/decider';
import { DocumentEvent, DocumentKind, DocumentUploaded, Purpose } from '../../src/domain/document/events';
import { BlobStore, StoredBlob } from '../../src/ports/blobStore';
import { ReadStore } from '../../src/ports/readStore';
import { workspacesCollection } from '../../projections/workspace/workspaceProjection';
import { DocumentActor, runDocumentCommand } from './documentCommand';
import { deleteBlobIfUnused, requireKnownTags } from './documentRules';

export type UploadDocumentPorts = CommandPorts & { readStore: ReadStore; blobStore: BlobStore };

/** A file already in the blob store, with the form fields decoded at the edge. */
export interface StoredUpload {
  blob: StoredBlob;
  kind: DocumentKind;
  mimeType: string;
  filename: string;
  title: string;
  /** Absent: the workspace's default purpose. */
  purpose?: Purpose;
  tags: string[];
}

export type UploadedDocument = DocumentUploaded['data'] & { id: string };

/**
 * UploadDocument for a stored file: the workspace's default purpose when none is given,
 * every tag a tag of the workspace. A refused upload removes its file again unless
 * another document uses the same bytes.
 */
export async function uploadDocument(ports: UploadDocumentPorts, input: { actor: DocumentActor; upload: StoredUpload }): Promise<UploadedDocument> {
  const { actor, upload } = input;
  const documentId = randomUUID();
  // The stored file is held from its put until this upload is recorded or refused (BlobStore.put).
  let held = true;
  const release = (): void => {
    if (held) ports.blobStore.release(upload.blob.sha256);
    held = false;
  };
  const removeFile = async (): Promise<void> => {
    release();
    await deleteBlobIfUnused(ports, upload.blob.sha256).catch(() => undefined);
  };
  try {
    return await recordUpload(ports, actor, upload, documentId, removeFile);
  } finally {
    release();
  }
}

async function recordUpload(ports: UploadDocumentPorts, actor: DocumentActor, upload: StoredUpload, documentId: string, removeFile: () => Promise<void>): Promise<UploadedDocument> {
  let purpose: Purpose;
  try {
    purpose = upload.purpose ?? (await workspacesCollection(ports.readStore).get(actor.workspaceId))?.settings.defaultDocumentPurpose ?? 'KNOWLEDGE';
    await requireKnownTags(ports.readStore, actor.workspaceId, upload.tags);
  } catch (err) {
    await removeFile();
    throw err;
  }
  const command: DocumentCommand = {
    type: 'UploadDocument',
    documentId,
    workspaceId: actor.workspaceId,
    actorId: actor.actorId,
    processingId: randomUUID(),
    blob: upload.blob,
    kind: upload.kind,
    mimeType: upload.mimeType,
    filename: upload.filename,
    title: upload.title,
    purpose,
    tags: upload.tags,
    now: actor.now,
  };
  let events: DocumentEvent[];
  try {
    ({ events } = await runDocumentCommand(ports, actor, documentId, command));
  } catch (err) {
    // A refusal appends nothing, so the file is nobody's yet; after any other failure the
    // append may have happened, and the file is left alone.
    if (err instanceof DomainError) await removeFile();
    throw err;
  }
  const e = events[0];
  if (e.type !== 'DocumentUploaded') throw new Error('unexpected event');
  return { id: documentId, ...e.data };
}
