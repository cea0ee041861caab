import type { StatementCache } from './statements';

/** Entries kept by the stem and document-frequency caches before they are emptied. */
export const CACHE_LIMIT = 50_000;

/**
 * Porter stems of words with FTS5's own tokenizer (`porter unicode61 remove_diacritics 2`,
 * as the chunk index uses), through the temporary `query_tokens` table; cached.
 */
export class Stemmer {
  private readonly cache = new Map<string, string>();

  constructor(private readonly statements: StatementCache) {}

  /** The cached stem of a word ('' for a word with no token), or undefined if not stemmed yet. */
  cached(word: string): string | undefined {
    return this.cache.get(word);
  }

  /** Porter stems of words, cached; '' for a word with no token. */
  stems(words: string[]): string[] {
    const missing = [...new Set(words.filter((w) => !this.cache.has(w)))];
    if (missing.length > 0) {
      if (this.cache.size + missing.length > CACHE_LIMIT) this.cache.clear();
      this.statements.db.transaction(() => {
        const ins = this.statements.get('INSERT INTO temp.query_tokens(rowid, t) VALUES (?, ?)');
        missing.forEach((w, i) => ins.run(i + 1, w));
        const found = this.statements.get<[], { term: string; doc: number }>('SELECT term, doc FROM temp.query_instances WHERE "offset" = 0')
          .all();
        for (const w of missing) this.cache.set(w, '');
        for (const f of found) this.cache.set(missing[f.doc - 1], f.term);
        this.statements.get('DELETE FROM temp.query_tokens').run();
      })();
    }
    return words.map((w) => this.cache.get(w) ?? '');
  }
}
