/**
 * A line diff for the editor's conflict panel: rows aligned side by side, their text on the
 * left and the user's on the right. Lines common to the start and the end are matched first;
 * the middle is diffed by longest common subsequence when it is small enough (bounded: at most
 * MAX_CELLS comparisons), else shown as one changed block.
 */
export type DiffRow =
  | { kind: 'same'; left: string; right: string; leftNo: number; rightNo: number }
  | { kind: 'changed'; left: string | null; right: string | null; leftNo: number | null; rightNo: number | null };

const MAX_CELLS = 2_000_000;

export function sideBySide(theirs: string, mine: string): DiffRow[] {
  const a = theirs.split('\n');
  const b = mine.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const rows: DiffRow[] = [];
  for (let i = 0; i < start; i++) rows.push({ kind: 'same', left: a[i], right: b[i], leftNo: i + 1, rightNo: i + 1 });
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const ops = midA.length * midB.length <= MAX_CELLS ? lcsOps(midA, midB) : [...midA.map(() => 'del' as const), ...midB.map(() => 'add' as const)];
  // Walk the operations; a run of deletions followed by additions is paired row by row.
  let i = 0;
  let j = 0;
  let k = 0;
  while (k < ops.length) {
    if (ops[k] === 'same') {
      rows.push({ kind: 'same', left: midA[i], right: midB[j], leftNo: start + i + 1, rightNo: start + j + 1 });
      i++;
      j++;
      k++;
      continue;
    }
    const dels: number[] = [];
    const adds: number[] = [];
    while (k < ops.length && ops[k] !== 'same') {
      if (ops[k] === 'del') dels.push(i++);
      else adds.push(j++);
      k++;
    }
    for (let n = 0; n < Math.max(dels.length, adds.length); n++) {
      const l = dels[n];
      const r = adds[n];
      rows.push({
        kind: 'changed',
        left: l === undefined ? null : midA[l],
        right: r === undefined ? null : midB[r],
        leftNo: l === undefined ? null : start + l + 1,
        rightNo: r === undefined ? null : start + r + 1,
      });
    }
  }
  for (let n = 0; n < a.length - endA; n++) rows.push({ kind: 'same', left: a[endA + n], right: b[endB + n], leftNo: endA + n + 1, rightNo: endB + n + 1 });
  return rows;
}

/** Operations turning a into b (same / del from a / add from b), by a longest common subsequence table. */
function lcsOps(a: string[], b: string[]): ('same' | 'del' | 'add')[] {
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const t = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) t[i * w + j] = a[i] === b[j] ? t[(i + 1) * w + j + 1] + 1 : Math.max(t[(i + 1) * w + j], t[i * w + j + 1]);
  }
  const ops: ('same' | 'del' | 'add')[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      ops.push('same');
      i++;
      j++;
    } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
      ops.push('del');
      i++;
    } else {
      ops.push('add');
      j++;
    }
  }
  while (i++ < n) ops.push('del');
  while (j++ < m) ops.push('add');
  return ops;
}
