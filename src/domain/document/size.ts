/** Lines that start a Markdown section (ATX or setext heading). */
const SECTION_LINE = /^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)/gm;

/**
 * An upper bound of the UTF-8 bytes of the text extracted from `content` (text or Markdown
 * of at most 256 K characters, one piece): normalisation removes whitespace and control
 * characters, but NFC may lengthen a few characters, and Markdown sections (cut at headings)
 * are joined by a blank line: at most one byte more per heading.
 */
export function extractedSizeBound(content: string, kind: string | undefined): number {
  const bytes = Math.max(Buffer.byteLength(content, 'utf8'), Buffer.byteLength(content.normalize('NFC'), 'utf8'));
  return kind === 'md' ? bytes + (content.match(SECTION_LINE)?.length ?? 0) : bytes;
}

