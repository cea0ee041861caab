import Database from 'better-sqlite3';
import { chainHash, GENESIS_HASH } from '../../core/hashChain';
import { EventEmitter } from 'node:events';
import { Metrics, noMetrics } from '../../ports/metrics';
import { NewEvent, RecordedEvent, EventMetadata } from '../../domain/event';
import {
  AppendResult,
  EventBatchHandler,
  EventStore,
  ExpectedRevision,
  Subscription,
  WrongExpectedRevisionError,
} from '../../ports/eventStore';

/** A row of the `events` table (also read directly by `kb verify`). */
export interface EventRow {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  hash: string;
}

interface PendingAppend {
  streamId: string;
  events: NewEvent[];
  expected: ExpectedRevision;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
  /** process.hrtime.bigint() when append was called. */
  startedAt: bigint;
}

export interface SqliteEventStoreOptions {
  /**
   * `full`: every commit is fsynced before the append resolves (durable across power loss
   * and kill -9). `normal`: WAL without fsync per commit (survives kill -9 of the process,
   * not power loss). Default `full`.
   */
  synchronous?: 'full' | 'normal';
  /** Append latency and group-commit sizes (default: not recorded). */
  metrics?: Pick<Metrics, 'eventStoreAppend' | 'groupCommit'>;
}

/**
 * Event store on one SQLite file in WAL mode. Concurrent appends are grouped into one
 * transaction (group commit): every append that arrives while a commit is being
 * prepared shares its fsync, yet each is checked and fails on its own.
 */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly emitter = new EventEmitter();
  private pending: PendingAppend[] = [];
  private flushScheduled = false;
  private lastHash: string;
  private lastPosition: number;
  private closed = false;
  private readonly metrics: Pick<Metrics, 'eventStoreAppend' | 'groupCommit'>;
  private readonly stmts: {
    streamHead: Database.Statement<[string], { revision: number }>;
    byId: Database.Statement<[string], { stream_id: string; revision: number; position: number }>;
    insert: Database.Statement<[number, string, string, number, string, string, string, string]>;
    readStream: Database.Statement<[string, number], EventRow>;
    readAll: Database.Statement<[number, number], EventRow>;
    head: Database.Statement<[], { position: number | null; hash: string | null }>;
  };

  constructor(file: string, options: SqliteEventStoreOptions = {}) {
    this.db = new Database(file);
    this.metrics = options.metrics ?? noMetrics;
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    this.db.pragma('busy_timeout = 5000');
    // Freed pages and cells are zeroed, so nothing once deleted or rewritten lingers in the file.
    this.db.pragma('secure_delete = ON');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        stream_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        metadata TEXT NOT NULL,
        hash TEXT NOT NULL,
        UNIQUE (stream_id, revision)
      );
    `);
    this.stmts = {
      streamHead: this.db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?'),
      byId: this.db.prepare('SELECT stream_id, revision, position FROM events WHERE id = ?'),
      insert: this.db.prepare(
        'INSERT INTO events (position, id, stream_id, revision, type, data, metadata, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      readStream: this.db.prepare('SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision'),
      readAll: this.db.prepare('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?'),
      head: this.db.prepare('SELECT position, hash FROM events ORDER BY position DESC LIMIT 1'),
    };
    const head = this.stmts.head.get();
    this.lastPosition = head?.position ?? 0;
    this.lastHash = head?.hash ?? GENESIS_HASH;
    this.emitter.setMaxListeners(0);
  }

  /** The underlying database, for tools (verify, export) that read it directly. */
  get database(): Database.Database {
    return this.db;
  }

  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    return new Promise((resolve, reject) => {
      this.pending.push({ streamId, events, expected, resolve, reject, startedAt: process.hrtime.bigint() });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private currentRevision(streamId: string): number | 'no_stream' {
    const row = this.stmts.streamHead.get(streamId);
    return row?.revision ?? 'no_stream';
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const outcomes: ({ ok: true; result: AppendResult } | { ok: false; error: unknown })[] = [];
    let position = this.lastPosition;
    let hash = this.lastHash;
    const tx = this.db.transaction(() => {
      for (const p of batch) {
        this.db.exec('SAVEPOINT append');
        const savedPosition = position;
        const savedHash = hash;
        try {
          outcomes.push({ ok: true, result: this.appendOne(p, () => ++position, (h) => (hash = h), () => hash) });
          this.db.exec('RELEASE append');
        } catch (error) {
          this.db.exec('ROLLBACK TO append');
          this.db.exec('RELEASE append');
          position = savedPosition;
          hash = savedHash;
          outcomes.push({ ok: false, error });
        }
      }
    });
    try {
      tx.immediate();
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    this.lastPosition = position;
    this.lastHash = hash;
    this.metrics.groupCommit(batch.length);
    const now = process.hrtime.bigint();
    batch.forEach((p, i) => {
      this.metrics.eventStoreAppend(Number(now - p.startedAt) / 1e9);
      const o = outcomes[i];
      if (o.ok) p.resolve(o.result);
      else p.reject(o.error);
    });
    this.emitter.emit('appended', this.lastPosition);
  }

  private appendOne(
    p: PendingAppend,
    nextPosition: () => number,
    setHash: (h: string) => void,
    getHash: () => string,
  ): AppendResult {
    // Idempotency: an event id already in the log is not stored again.
    const fresh: NewEvent[] = [];
    let lastExisting: { revision: number; position: number } | undefined;
    for (const e of p.events) {
      const existing = this.stmts.byId.get(e.id);
      if (existing) {
        if (existing.stream_id !== p.streamId) throw new Error(`event id ${e.id} already used in another stream`);
        lastExisting = existing;
      } else fresh.push(e);
    }
    const actual = this.currentRevision(p.streamId);
    if (fresh.length === 0) {
      return {
        nextRevision: actual === 'no_stream' ? -1 : actual,
        position: lastExisting?.position ?? this.lastPosition,
      };
    }
    if (fresh.length !== p.events.length) {
      throw new Error('an append mixed events already stored with new ones');
    }
    if (p.expected !== 'any') {
      const ok = p.expected === 'no_stream' ? actual === 'no_stream' : actual === p.expected;
      if (!ok) throw new WrongExpectedRevisionError(p.streamId, p.expected, actual);
    }
    let revision = actual === 'no_stream' ? -1 : actual;
    let position = 0;
    for (const e of fresh) {
      revision += 1;
      position = nextPosition();
      const hash = chainHash(getHash(), { id: e.id, streamId: p.streamId, revision, position, type: e.type, data: e.data, metadata: e.metadata });
      this.stmts.insert.run(position, e.id, p.streamId, revision, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata), hash);
      setHash(hash);
    }
    return { nextRevision: revision, position };
  }

  private toRecorded(row: EventRow): RecordedEvent {
    return {
      id: row.id,
      streamId: row.stream_id,
      revision: row.revision,
      position: row.position,
      type: row.type,
      data: JSON.parse(row.data) as unknown,
      metadata: JSON.parse(row.metadata) as EventMetadata,
      hash: row.hash,
    };
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    return this.stmts.readStream.all(streamId, fromRevision).map((r) => this.toRecorded(r));
  }

  async readAll(afterPosition: number, maxCount: number): Promise<RecordedEvent[]> {
    return this.stmts.readAll.all(afterPosition, maxCount).map((r) => this.toRecorded(r));
  }

  async headPosition(): Promise<number> {
    return this.lastPosition;
  }

  subscribe(afterPosition: number, handler: EventBatchHandler, onError?: (err: unknown) => void): Subscription {
    let position = afterPosition;
    let stopped = false;
    let wake: (() => void) | null = null;
    const onAppended = (): void => {
      const w = wake;
      wake = null;
      w?.();
    };
    this.emitter.on('appended', onAppended);
    const loop = (async () => {
      while (!stopped) {
        let batch: RecordedEvent[];
        try {
          batch = this.closed ? [] : await this.readAll(position, 500);
          if (batch.length > 0) {
            await handler(batch);
            position = batch[batch.length - 1].position;
            continue;
          }
        } catch (err) {
          onError?.(err);
          await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        if (stopped) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (this.lastPosition > position) onAppended();
        });
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        this.emitter.off('appended', onAppended);
        onAppended();
        await loop;
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Let queued appends commit before closing.
    if (this.pending.length > 0) this.flush();
    this.closed = true;
    this.emitter.emit('appended', this.lastPosition);
    this.db.close();
  }
}
