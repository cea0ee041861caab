/**
 * Whitespace normalisation of extracted text, shared by every extractor:
 *
 * - Unicode NFC; CRLF / CR line ends become LF; a leading BOM is dropped;
 * - soft hyphens and zero-width characters are removed;
 * - other control characters and exotic spaces (NBSP, en/em spaces, form feed, ...) become spaces;
 * - runs of spaces and tabs collapse to one space; lines are trimmed;
 * - more than one blank line collapses to one (a paragraph break is "\n\n");
 * - the result is trimmed.
 *
 * It is line-local except for blank-line collapsing, so text may be normalised piece by
 * piece when pieces are cut at line ends (see `normalizeText` callers that stream).
 */
export function normalizeText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    .replace(/[\u00ad\u200b-\u200d\u2060\ufeff]/g, '')
    // eslint-disable-next-line no-control-regex -- replacing control characters is the point
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Normalises one line of text (no line breaks in the result). */
export function normalizeInline(text: string): string {
  return normalizeText(text).replace(/\s+/g, ' ');
}
