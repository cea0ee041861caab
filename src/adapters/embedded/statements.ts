import type Database from 'better-sqlite3';

/** Prepared statements by SQL text: writes and searches run the same few again and again. */
export class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database, private readonly limit = 200) {}

  get<P extends unknown[] = unknown[], R = unknown>(sql: string): Database.Statement<P, R> {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      if (this.statements.size >= this.limit) this.statements.clear();
      this.statements.set(sql, st);
    }
    return st as unknown as Database.Statement<P, R>;
  }
}
