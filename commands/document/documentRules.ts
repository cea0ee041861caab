import { DomainError } from '../../src/domain/errors';
import { BlobStore } from '../../src/ports/blobStore';
import { ReadStore } from '../../src/ports/readStore';
import { documentsCollection } from '../../projections/document/documentProjection';
import { tagsCollection, tagViewId } from '../../projections/workspace/workspaceProjection';
import { UUID_PATTERN } from '../../src/domain/ids';

// Every id the service issues is a UUID; a tag id that is not one names no tag and is never looked up.
const UUID = UUID_PATTERN;

/**
 * Tags one document may carry (distinct ids). The search index keeps a document's tags on
 * every one of its chunks: unbounded, 1,000 tags (a 39 KB PUT) on a 78 KB Markdown document of
 * 5,000 sections grew search.db by 205 MB and its WAL by 210 MB, and a document may have
 * 200,000 chunks. At 50, a chunk's tags weigh about as much as its vector.
 */
export const MAX_DOCUMENT_TAGS = 50;

/**
 * 400 VALIDATION_ERROR when there are more than MAX_DOCUMENT_TAGS distinct tags, or naming
 * every tag id that is not a tag of the workspace.
 */
export async function requireKnownTags(readStore: ReadStore, workspaceId: string, tagIds: string[]): Promise<void> {
  const distinct = new Set(tagIds).size;
  if (distinct > MAX_DOCUMENT_TAGS) {
    throw new DomainError('VALIDATION_ERROR', `tags: a document has at most ${MAX_DOCUMENT_TAGS} tags; ${distinct} were given.`, {
      fields: [{ field: 'tags', problem: `at most ${MAX_DOCUMENT_TAGS} tags` }],
      maxTags: MAX_DOCUMENT_TAGS,
      count: distinct,
    });
  }
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
