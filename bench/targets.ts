/**
 * Figures with targets (issue 13). A bench calls `figure(...)` for each measured value that
 * has a target; the value is printed at once, beside its target, and `npm run bench` prints
 * every recorded figure again in one table at the end. Figures without a target are printed
 * by the benches themselves as before.
 */
export interface Target {
  /** `max`: the value must stay at or under `value`; `min`: at or above it. */
  kind: 'max' | 'min';
  value: number;
}

export interface Figure {
  bench: string;
  name: string;
  value: number;
  unit: string;
  target: Target;
  met: boolean;
}

const recorded: Figure[] = [];

const fmt = (v: number): string => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(3)).toString());

export function describeTarget(t: Target, unit: string): string {
  if (t.kind === 'max' && t.value === 0) return `0 ${unit}`.trim();
  return `${t.kind === 'max' ? '<' : '≥'} ${fmt(t.value)} ${unit}`.trim();
}

/** Records and prints one figure; returns whether it met its target. */
export function figure(bench: string, name: string, value: number, unit: string, target: Target): boolean {
  const met = target.kind === 'max' ? value <= target.value : value >= target.value;
  recorded.push({ bench, name, value, unit, target, met });
  console.log(`  ${name}: ${fmt(value)} ${unit} (target ${describeTarget(target, unit)}: ${met ? 'met' : 'MISSED'})`);
  return met;
}

export function recordedFigures(): readonly Figure[] {
  return recorded;
}

/** The end-of-run table: every figure beside its target. */
export function printTargetTable(): void {
  if (!recorded.length) return;
  const rows = recorded.map((f) => [f.bench, f.name, `${fmt(f.value)} ${f.unit}`.trim(), describeTarget(f.target, f.unit), f.met ? 'met' : 'MISSED']);
  const head = ['bench', 'figure', 'measured', 'target', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  console.log('\n== figures against their targets ==');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  const missed = recorded.filter((f) => !f.met).length;
  console.log(`${recorded.length - missed} of ${recorded.length} targets met`);
}
