/** RFC 4180 CSV of a projection's result: an array of objects (columns: keys in first-seen order) or of arrays. */
export function toCsv(value: unknown): string {
  const rows = Array.isArray(value) ? value : value !== null && typeof value === 'object' ? Object.entries(value).map(([key, v]) => ({ key, ...(isRecord(v) ? v : { value: v }) })) : null;
  if (!rows) throw new Error('--format csv needs a result that is an array of rows (objects or arrays) or an object of rows');
  if (rows.length === 0) return '';
  if (rows.every(Array.isArray)) return rows.map((r: unknown[]) => r.map(cell).join(',')).join('\r\n') + '\r\n';
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    if (!isRecord(r)) throw new Error('--format csv: every row must be an object (or every row an array)');
    for (const k of Object.keys(r)) {
      if (seen.has(k)) continue;
      seen.add(k);
      columns.push(k);
    }
  }
  const lines = [columns.map(cell).join(',')];
  for (const r of rows as Record<string, unknown>[]) lines.push(columns.map((c) => cell(Object.hasOwn(r, c) ? r[c] : null)).join(','));
  return lines.join('\r\n') + '\r\n';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
