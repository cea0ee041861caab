/**
 * Text analysis for full-text queries, independent of any index: stopwords, query terms,
 * word splitting as FTS5's unicode61 tokenizer does it, and FTS5 MATCH expressions.
 * (Stemming uses the index's own tokenizer: see the adapters.)
 */

/** A BM25 query term: its text (quoted for MATCH), its stem and its weight in the query. */
export interface WeightedTerm {
  text: string;
  stem: string;
  weight: number;
  /** A term of the user's query (not an expansion term). */
  original: boolean;
}

/** Words dropped from full-text queries (kept if the query has nothing else). */
export const STOPWORDS: ReadonlySet<string> = new Set(
  ('a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most must my myself no nor not now of off on once only or ' +
    'other our ours ourselves out over own same she should so some such than that the their theirs them themselves then ' +
    'there these they this those through to too under until up very was we were what when where which while who whom why ' +
    'will with would you your yours yourself yourselves')
    .split(' '),
);

export const MAX_QUERY_TERMS = 64;
/** Longer tokens are never query or feedback terms. */
const MAX_TERM_LENGTH = 64;

/** Lower-cased tokens (letters and digits) of text, each at most 64 characters. */
export function tokens(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => t.length <= MAX_TERM_LENGTH);
}

/** Terms of user text, safe to quote for FTS5 MATCH. */
export function queryTerms(text: string): string[] {
  const all = tokens(text);
  const content = all.filter((t) => !STOPWORDS.has(t));
  const chosen = content.length > 0 ? content : all;
  return [...new Set(chosen)].slice(0, MAX_QUERY_TERMS);
}

/** Lower-cased words of text as FTS5's unicode61 tokenizer splits them (letters and digits). */
export function wordsOf(text: string): string[] {
  // Pure ASCII text (the common case) takes a cheaper, equivalent expression.
  // eslint-disable-next-line no-control-regex
  return (/^[\x00-\x7f]*$/.test(text) ? text.toLowerCase().match(/[a-z0-9]+/g) : text.toLowerCase().match(/[\p{L}\p{N}]+/gu)) ?? [];
}

/** Whether a feedback token may become an expansion term: not a stopword, a number or a single character. */
export function isExpansionCandidate(token: string): boolean {
  return token.length >= 2 && !STOPWORDS.has(token) && !/^\p{N}+$/u.test(token);
}

/** FTS5 MATCH expression ORing the quoted terms; never a syntax error. */
export function toMatchExpression(terms: string[]): string {
  return terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR ');
}
