import fc from 'fast-check';
import { isExpansionCandidate, MAX_QUERY_TERMS, queryTerms, STOPWORDS, toMatchExpression, tokens, wordsOf } from '../../src/search/textAnalysis';

describe('text analysis', () => {
  it('query terms: lower-cased, stopwords dropped, duplicates merged, order kept', () => {
    expect(queryTerms('What is the Boundary-Layer of THE boundary?')).toEqual(['boundary', 'layer']);
  });

  it('keeps stopwords when the query has nothing else', () => {
    expect(queryTerms('to be or not to be')).toEqual(['to', 'be', 'or', 'not']);
  });

  it('splits on anything but letters and digits, in any script', () => {
    expect(queryTerms('Mach-2 flow, Überschall; 音速 "quoted"')).toEqual(['mach', '2', 'flow', 'überschall', '音速', 'quoted']);
    expect(queryTerms('  ,.;  ')).toEqual([]);
  });

  it('drops tokens over 64 characters and keeps at most 64 terms', () => {
    expect(queryTerms(`${'a'.repeat(65)} wing ${'b'.repeat(64)}`)).toEqual(['wing', 'b'.repeat(64)]);
    const many = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    expect(queryTerms(many)).toHaveLength(MAX_QUERY_TERMS);
    expect(queryTerms(many)[63]).toBe('w63');
  });

  it('tokens: lower-cased letter/digit runs of at most 64 characters', () => {
    expect(tokens('The 2 Wings, the WING')).toEqual(['the', '2', 'wings', 'the', 'wing']);
  });

  it('wordsOf: the ASCII fast path splits exactly as the Unicode expression', () => {
    const unicode = (t: string): string[] => t.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    fc.assert(fc.property(fc.string({ unit: 'binary-ascii', maxLength: 200 }), (t) => expect(wordsOf(t)).toEqual(unicode(t))));
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (t) => expect(wordsOf(t)).toEqual(unicode(t))));
    expect(wordsOf('Schöne Grüße, 42 Wings')).toEqual(['schöne', 'grüße', '42', 'wings']);
    expect(wordsOf('')).toEqual([]);
  });

  it('expansion candidates exclude stopwords, numbers and single characters', () => {
    expect(isExpansionCandidate('shock')).toBe(true);
    expect(isExpansionCandidate('m2')).toBe(true);
    expect(isExpansionCandidate('the')).toBe(false);
    expect(isExpansionCandidate('1950')).toBe(false);
    expect(isExpansionCandidate('x')).toBe(false);
    expect(STOPWORDS.has('which')).toBe(true);
  });

  it('match expressions quote every term (embedded quotes doubled) and OR them', () => {
    expect(toMatchExpression(['shock', 'wave'])).toBe('"shock" OR "wave"');
    expect(toMatchExpression(['a"b'])).toBe('"a""b"');
    expect(toMatchExpression([])).toBe('');
  });
});
