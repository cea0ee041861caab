/** Visit every string at `path` in `data`, replacing it with what `fn` returns. */
export function mapPath(data: unknown, path: readonly string[], fn: (value: string) => string): unknown {
  if (path.length === 0) return typeof data === 'string' ? fn(data) : data;
  const [head, ...rest] = path;
  if (head === '[]') return Array.isArray(data) ? data.map((item) => mapPath(item, rest, fn)) : data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return data;
  const obj = data as Record<string, unknown>;
  if (!(head in obj)) return data;
  return { ...obj, [head]: mapPath(obj[head], rest, fn) };
}

/** The document an event with text belongs to. */
export function documentIdOf(data: unknown): string | null {
  if (data === null || typeof data !== 'object') return null;
  const id = (data as Record<string, unknown>).documentId;
  return typeof id === 'string' && id.length > 0 ? id : null;
}
