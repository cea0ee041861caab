import { batchesByBytes, EVENT_PAYLOAD_BUDGET, jsonBytes } from '../eventSize';
import { ChunkData, EmbeddedVector, ExtractedSectionData } from './events';

/** A long section is cut into pieces of at most this many bytes of JSON (so several fit in one event). */
export const SECTION_PIECE_BYTES = 64 * 1024;

/**
 * `text` cut into pieces whose JSON is at most `maxBytes` each, joined back with '' to the
 * original. Cuts fall after a whitespace character when one is near, never inside a
 * surrogate pair.
 */
export function splitText(text: string, maxBytes: number): string[] {
  const out: string[] = [];
  let rest = text;
  // A string of more characters than maxBytes has more bytes of JSON too: measured only when it may fit (else this is quadratic in a long text).
  while (rest.length > maxBytes || jsonBytes(rest) > maxBytes) {
    // Characters take 1 to 6 bytes of JSON: start from the budget and shrink by measurement.
    let n = Math.min(rest.length, maxBytes);
    for (let size = jsonBytes(rest.slice(0, n)); size > maxBytes; size = jsonBytes(rest.slice(0, n))) {
      n = Math.max(1, Math.min(n - 1, Math.floor((n * maxBytes) / size)));
    }
    if (n < rest.length && isHighSurrogate(rest.charCodeAt(n - 1)) && n > 1) n -= 1;
    const space = lastWhitespace(rest, n, Math.max(1, n - 256));
    if (space > 0) n = space;
    out.push(rest.slice(0, n));
    rest = rest.slice(n);
  }
  if (rest.length > 0 || out.length === 0) out.push(rest);
  return out;
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

/** Index just after the last whitespace in text[lowest, end), or -1. */
function lastWhitespace(text: string, end: number, lowest: number): number {
  for (let i = end - 1; i >= lowest; i--) if (/\s/.test(text[i])) return i + 1;
  return -1;
}

/**
 * A run's extracted sections as the `sections` of its DocumentTextExtracted events: long
 * sections cut into pieces (each after the first `continued: true`), pieces grouped so each
 * event's sections take at most EVENT_PAYLOAD_BUDGET bytes of JSON.
 */
export function textExtractedParts(sections: readonly ExtractedSectionData[], budget = EVENT_PAYLOAD_BUDGET): ExtractedSectionData[][] {
  const pieces: ExtractedSectionData[] = [];
  for (const s of sections) pieces.push(...sectionPieces(s, budget));
  return batchesByBytes(pieces, budget);
}

/** One section as the pieces `textExtractedParts` cuts it into (each after the first `continued: true`). */
export function sectionPieces(s: ExtractedSectionData, budget = EVENT_PAYLOAD_BUDGET): ExtractedSectionData[] {
  const pieceBytes = Math.min(SECTION_PIECE_BYTES, Math.floor(budget / 2));
  return splitText(s.text, pieceBytes).map((text, i) => ({ ...s, text, ...(i > 0 ? { continued: true } : {}) }));
}

/** The document's text from its sections (of one or more events, in order): sections joined by a blank line, pieces joined as they were cut. */
export function joinSections(sections: readonly ExtractedSectionData[], after = ''): string {
  let text = after;
  for (const s of sections) text += (text.length === 0 || s.continued ? '' : '\n\n') + s.text;
  return text;
}

/** Chunks of a run in DocumentChunked batches: at most `maxChunks` and EVENT_PAYLOAD_BUDGET bytes each. */
export const chunkBatches = (chunks: readonly ChunkData[], maxChunks: number, budget = EVENT_PAYLOAD_BUDGET): ChunkData[][] => batchesByBytes(chunks, budget, maxChunks);

/** Vectors of an embedding batch in ChunksEmbedded events of at most EVENT_PAYLOAD_BUDGET bytes each (about 23 at 1536 dimensions, 11 at 3072). */
export const vectorBatches = (vectors: readonly EmbeddedVector[], budget = EVENT_PAYLOAD_BUDGET): EmbeddedVector[][] => batchesByBytes(vectors, budget);
