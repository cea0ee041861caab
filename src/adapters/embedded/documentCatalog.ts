/**
 * The embedded index's in-memory view of documents: interned ids, each document's
 * workspace, purpose, tags and chunk count, and the scopes (allowed documents) of
 * search filters, cached.
 */
import type { Purpose, SearchFilters } from '../../ports/searchIndex';
import type { SlabScope } from './vectorSlab';

export const PURPOSE_CODE: Record<Purpose, number> = { KNOWLEDGE: 1, INSTRUCTION: 2 };

/** Documents a search may return: a mask over interned ids, their list and chunk count. */
export interface Scope extends SlabScope {
  /** The workspace's number (its rowid range) and its chunk count. */
  workspace: number;
  workspaceChunks: number;
}

export interface DocInfo {
  workspace: number;
  purpose: number;
  tags: string[];
  chunks: number;
}

const SCOPE_CACHE_SIZE = 32;

export class DocumentCatalog {
  private readonly docIds = new Map<string, number>();
  private readonly docNames: string[] = [];
  private readonly docs: (DocInfo | undefined)[] = [];
  /** Documents of each workspace (interned ids), so a search touches only its workspace. */
  private readonly workspaceDocs = new Map<number, Set<number>>();
  /** Chunks of each workspace (the sum over its documents). */
  private readonly workspaceChunks = new Map<number, number>();
  /** Scopes of recent filters; any change to documents' membership or fields empties it. */
  private readonly scopeCache = new Map<string, Scope>();
  /** Documents held (set and not unset). */
  private held = 0;

  /** `workspaceNumber`: a workspace id's number, undefined when it has none. */
  constructor(private readonly workspaceNumber: (workspaceId: string) => number | undefined) {}

  /** The interned number of a document id, if it has one. */
  docId(documentId: string): number | undefined {
    return this.docIds.get(documentId);
  }

  /** The document's number, assigned on first use (numbers are never reused). */
  intern(documentId: string): number {
    let d = this.docIds.get(documentId);
    if (d === undefined) {
      d = this.docNames.length;
      this.docIds.set(documentId, d);
      this.docNames.push(documentId);
    }
    return d;
  }

  /** Documents held. */
  documentCount(): number {
    return this.held;
  }

  info(doc: number): DocInfo | undefined {
    return this.docs[doc];
  }

  set(doc: number, info: DocInfo): void {
    this.unset(doc);
    this.scopeCache.clear();
    this.docs[doc] = info;
    this.held++;
    let set = this.workspaceDocs.get(info.workspace);
    if (!set) this.workspaceDocs.set(info.workspace, (set = new Set()));
    set.add(doc);
    this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) + info.chunks);
  }

  unset(doc: number): void {
    this.scopeCache.clear();
    const info = this.docs[doc];
    if (info) {
      this.held--;
      this.workspaceDocs.get(info.workspace)?.delete(doc);
      this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) - info.chunks);
    }
    this.docs[doc] = undefined;
  }

  /** One more chunk of a known document (loading). */
  addChunk(info: DocInfo): void {
    info.chunks++;
    this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) + 1);
  }

  /** Changes a document's purpose or tags. */
  update(info: DocInfo, fields: { purpose?: Purpose; tags?: string[] }): void {
    if (fields.purpose !== undefined) info.purpose = PURPOSE_CODE[fields.purpose];
    if (fields.tags !== undefined) info.tags = [...fields.tags];
    this.scopeCache.clear();
  }

  /** Forgets every document's fields (interned numbers stay). */
  clear(): void {
    this.docs.length = 0;
    this.held = 0;
    this.workspaceDocs.clear();
    this.workspaceChunks.clear();
    this.scopeCache.clear();
  }

  /** Allowed documents and how many chunks they hold; undefined when the workspace is unknown. */
  scope(filters: SearchFilters): Scope | undefined {
    const key = JSON.stringify([filters.workspaceId, filters.purpose ?? null, filters.tags ?? null, filters.documentIds ?? null]);
    const cached = this.scopeCache.get(key);
    if (cached) return cached;
    const scope = this.computeScope(filters);
    if (scope) {
      if (this.scopeCache.size >= SCOPE_CACHE_SIZE) this.scopeCache.clear();
      this.scopeCache.set(key, scope);
    }
    return scope;
  }

  private computeScope(filters: SearchFilters): Scope | undefined {
    const ws = this.workspaceNumber(filters.workspaceId);
    if (ws === undefined) return undefined;
    const mask = new Uint8Array(this.docNames.length);
    const purpose = filters.purpose ? PURPOSE_CODE[filters.purpose] : 0;
    const tags = filters.tags ? new Set(filters.tags) : undefined;
    const consider = (d: number): void => {
      const info = this.docs[d];
      if (!info || info.workspace !== ws) return;
      if (purpose && info.purpose !== purpose) return;
      if (tags && !info.tags.some((t) => tags.has(t))) return;
      if (mask[d] === 0) {
        chunks += info.chunks;
        docs.push(d);
      }
      mask[d] = 1;
    };
    const docs: number[] = [];
    let chunks = 0;
    if (filters.documentIds) {
      for (const id of filters.documentIds) {
        const d = this.docIds.get(id);
        if (d !== undefined) consider(d);
      }
    } else {
      for (const d of this.workspaceDocs.get(ws) ?? []) consider(d);
    }
    return { mask, chunks, docs, workspace: ws, workspaceChunks: this.workspaceChunks.get(ws) ?? 0 };
  }
}
