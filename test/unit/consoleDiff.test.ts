import { sideBySide } from '../../web/src/diff';

/** The conflict panel's side-by-side line diff (web/src/diff.ts). */
describe('console: side-by-side line diff', () => {
  const text = (rows: ReturnType<typeof sideBySide>) => rows.map((r) => `${r.kind === 'same' ? '=' : '~'} ${r.left ?? '∅'} | ${r.right ?? '∅'}`);

  it('aligns equal lines and pairs a changed line with its replacement', () => {
    expect(text(sideBySide('a\nb\nc', 'a\nB\nc'))).toEqual(['= a | a', '~ b | B', '= c | c']);
  });

  it('shows lines only on one side as added or removed, keeping later equal lines aligned', () => {
    expect(text(sideBySide('a\nc\nd', 'a\nb\nc\nd\ne'))).toEqual(['= a | a', '~ ∅ | b', '= c | c', '= d | d', '~ ∅ | e']);
    expect(text(sideBySide('x\ny', ''))).toEqual(['~ x | ', '~ y | ∅']);
  });

  it('numbers the lines of each side', () => {
    const rows = sideBySide('one\ntwo\nthree', 'zero\none\nthree');
    expect(rows.map((r) => [r.leftNo, r.rightNo])).toEqual([
      [null, 1],
      [1, 2],
      [2, null],
      [3, 3],
    ]);
  });

  it('identical texts: every row the same', () => {
    expect(sideBySide('p\nq', 'p\nq').every((r) => r.kind === 'same')).toBe(true);
  });

  it('past its bound (2 million comparisons) the differing middle is one changed block, and both texts are still all there', () => {
    const theirs = ['head', ...Array.from({ length: 1600 }, (_, i) => `t${i}`), 'tail'].join('\n');
    const mine = ['head', ...Array.from({ length: 1600 }, (_, i) => `m${i}`), 'tail'].join('\n');
    const rows = sideBySide(theirs, mine);
    expect(rows[0]).toMatchObject({ kind: 'same', left: 'head' });
    expect(rows[rows.length - 1]).toMatchObject({ kind: 'same', left: 'tail' });
    expect(rows.filter((r) => r.kind === 'changed')).toHaveLength(1600);
    expect(rows.map((r) => r.left).filter((l) => l !== null)).toEqual(theirs.split('\n'));
    expect(rows.map((r) => r.right).filter((l) => l !== null)).toEqual(mine.split('\n'));
  });
});
