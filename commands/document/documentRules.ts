import { DomainError } from '../../src/domain/errors';
import { BlobStore } from '../../src/ports/blobStore';
import { ReadStore } from '../../src/ports/readStore';
import { documentsCollection } from '../../projections/document/documentProjection';
import { tagsCollection, tagViewId } from '../../projections/workspace/workspaceProjection';
import { UUID_PATTERN } from '../../src/domain/ids';

// Every id the service issues is a UUID; a tag id that is not one names no tag and is never looked up.
const UUID = UUID_PATTERN;

/** 400 VALIDATION_ERROR naming every tag id that is not a tag of the workspace. */
export async function requireKnownTags(readStore: ReadStore, workspaceId: string, tagIds: string[]): Promise<void> {
  const ids = tagIds.filter((t) => UUID.test(t));
  const found = ids.length ? await tagsCollection(readStore).getMany([...new Set(ids)].map((t) => tagViewId(workspaceId, t))) : [];
  const ok = new Set(found.filter((t) => t.workspaceId === workspaceId).map((t) => t.tagId));
  const unknown = [...tagIds.filter((t) => !UUID.test(t)), ...ids.filter((t) => !ok.has(t))];
  if (unknown.length) throw new DomainError('VALIDATION_ERROR', `tags: unknown tag ids in this workspace: ${unknown.join(', ')}`, { unknownTags: unknown });
}

/** Content-addressed: a stored file goes once no document uses it any more. */
export async function deleteBlobIfUnused(ports: { readStore: ReadStore; blobStore: BlobStore }, sha256: string): Promise<void> {
  const unused = async (): Promise<boolean> => (await documentsCollection(ports.readStore).count({ blobSha256: sha256 })) === 0;
  if (await unused()) await ports.blobStore.delete(sha256, { stillUnused: unused });
}
