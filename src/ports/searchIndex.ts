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
  /** The vector searches use (of the index's active model); empty: the chunk is found by BM25 only. */
  vector: Float32Array | number[];
  /** The model `vector` came from (absent: the index's active model; on an index without one it becomes it). */
  model?: string;
  /** During a model change: the chunk's vector from the model being built. */
  next?: { model: string; vector: Float32Array | number[] };
  page?: number;
  section?: string;
}

/** An embedding model as the index records it beside its vectors. */
export interface VectorModel {
  modelId: string;
  dimensions: number;
}

/** Which models the index holds vectors of. */
export interface VectorModels {
  /** The model of the vectors searches use; undefined while the index holds no vector. */
  active?: VectorModel;
  /** A model whose vectors are being built beside them (a change under way), with how many documents have them. */
  next?: VectorModel & { documents: number };
  /** Documents indexed. */
  documents: number;
}

/** One chunk's vector, by the chunk's index in its document. */
export interface ChunkVector {
  chunkIndex: number;
  vector: Float32Array | number[];
}

/** The query vector's model is no longer the index's active one (a switch happened meanwhile): embed the query again. */
export class VectorModelChangedError extends Error {
  constructor(
    readonly queryModel: string,
    readonly activeModel: string | undefined,
  ) {
    super(`query embedded with ${queryModel}, the index now answers with ${activeModel ?? 'no model'}`);
    this.name = 'VectorModelChangedError';
  }
}

/** Also when the error crossed a thread or process boundary as a plain Error carrying the name. */
export function isVectorModelChanged(err: unknown): boolean {
  return err instanceof VectorModelChangedError || (err instanceof Error && err.name === 'VectorModelChangedError');
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
  /** The model `vector` came from: a search whose model is not the index's active one throws VectorModelChangedError. */
  vectorModel?: string;
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

  // Embedding model changes (src/domain/embeddingModel): vectors of the next model are built
  // beside the active ones while searches use the active ones, then switched to at once.
  vectorModels(): Promise<VectorModels>;
  /** Starts holding vectors of `model` beside the active ones (those of any other next model are dropped). Repeatable. */
  beginVectorModel(model: VectorModel): Promise<void>;
  /**
   * Sets a document's vectors of `modelId`, by chunk index: the active vectors when it is the
   * active model (or the index has none yet), the next ones when it is the next model;
   * vectors of any other model are ignored. Chunks the index does not hold are ignored.
   */
  putVectors(documentId: string, modelId: string, vectors: ChunkVector[]): Promise<void>;
  /**
   * Makes `model` the active model in one step: its vectors replace the active ones, which are
   * dropped; a chunk without one is found by BM25 only until putVectors gives it one. Repeatable.
   */
  switchVectorModel(model: VectorModel): Promise<void>;
  /** Drops the vectors of the next model `modelId` (a change cancelled). */
  dropVectorModel(modelId: string): Promise<void>;
  close(): Promise<void>;
}

export const SEARCH_INDEX = Symbol('SEARCH_INDEX');
