/**
 * An ISO 8601 time as the API takes it (`YYYY-MM-DD`, optionally a time and an offset), or null.
 * `Date.parse` reads a day the month does not have as a day of the next month (2030-02-30 is
 * March 2): such a time names no day and is refused, as are a month 00 or 13.
 */
export function parseIsoTime(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(value);
  if (!m) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t)) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (month < 1 || month > 12 || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return null;
  return new Date(t);
}
