/**
 * The one text rule for strings people type (names, descriptions, queries): valid Unicode,
 * no control characters, no bidirectional overrides, lengths in code points. Applied at the
 * edge by the codecs in src/http/codecs.ts and by the tool endpoint's argument check.
 */

const LONE_SURROGATE = /\p{Cs}/u;
/** Bidirectional embeddings, overrides and isolates (Trojan-Source): U+202A–202E, U+2066–2069. */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;
/** Control characters (Unicode Cc). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
/** Control characters but tab, line feed and carriage return (multi-line text). */
// eslint-disable-next-line no-control-regex
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000B-\u000C\u000E-\u001F\u007F-\u009F]/;

/** Length as a person counts it: Unicode code points (an emoji is one, not two UTF-16 units). */
export const codePointLength = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

export type TextKind = 'line' | 'text' | 'content';

/** What is wrong with a string under the rule of its kind, or undefined. */
export function textProblem(s: string, kind: TextKind): string | undefined {
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode (it holds a lone surrogate)';
  if ((kind === 'line' ? CONTROL : CONTROL_BUT_LINES).test(s)) return kind === 'line' ? 'must not hold control characters or line breaks' : 'must not hold control characters (other than tab and line breaks)';
  if (kind !== 'content' && BIDI_CONTROL.test(s)) return 'must not hold bidirectional override or isolate characters (U+202A-U+202E, U+2066-U+2069)';
  return undefined;
}

/** What the text rule of a line refuses (lone surrogates, control characters, bidi overrides and isolates), everywhere in a string. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const REFUSED_IN_A_LINE = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]|\p{Cs}/gu;

/**
 * A name stored before the text rule applied to it (a file's name: uploads refuse these since), made safe
 * to show: each character the rule of a line refuses becomes U+FFFD, so "salary\u202Etxt.exe\u202C.md" no
 * longer reads as another file, and what was there stays visible as a replacement mark. Names that pass the
 * rule come back unchanged.
 */
export function shownLine(s: string): string {
  return s.replace(REFUSED_IN_A_LINE, '\uFFFD');
}
