export type Purpose = 'KNOWLEDGE' | 'INSTRUCTION';

/** One chunk of a VERIFIED document, as the index stores it. */
export interface IndexedChunk {
  workspaceId: string;
  documentId: string;
  documentTitle: string;
  purpose: Purpose;
  tags: string[];
  chunkIndex: number;
  content: string;
  vector: Float32Array | number[];
  page?: number;
  section?: string;
}

export interface SearchFilters {
  workspaceId: string;
  /** Documents having any of these tag ids. */
  tags?: string[];
  purpose?: Purpose;
  documentIds?: string[];
}

export interface SearchRequest {
  text: string;
  /** Query embedding; omitted for BM25-only searches. */
  vector?: Float32Array | number[];
  filters: SearchFilters;
  k: number;
  /** Ranking mode; defaults to the configured hybrid. */
  mode?: 'hybrid' | 'bm25' | 'dense';
}

export interface SearchHit {
  documentId: string;
  documentTitle: string;
  content: string;
  chunkIndex: number;
  /** Relevance in [0, 1], higher is better. */
  score: number;
  tags: string[];
  purpose: Purpose;
  page?: number;
  section?: string;
}

export interface DocumentFields {
  documentTitle?: string;
  purpose?: Purpose;
  tags?: string[];
}

/**
 * Full-text + dense-vector index over chunks of searchable documents. Only documents
 * whose chunks were upserted are searchable; the caller upserts on VERIFIED.
 */
export interface SearchIndex {
  /** Replace all chunks of a document with these. */
  upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void>;
  deleteDocument(documentId: string): Promise<void>;
  deleteWorkspace(workspaceId: string): Promise<void>;
  /** Change filterable fields of a document's chunks without re-embedding. */
  updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void>;
  search(request: SearchRequest): Promise<SearchHit[]>;
  /** Number of documents in the workspace matching the filters (for search-link scope counts). */
  countDocuments(filters: SearchFilters): Promise<number>;
  getCheckpoint(): Promise<number>;
  setCheckpoint(position: number): Promise<void>;
  /** Drop everything (rebuild). */
  clear(): Promise<void>;
  close(): Promise<void>;
}

export const SEARCH_INDEX = Symbol('SEARCH_INDEX');
