import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { chainHash, GENESIS_HASH } from '../../core/hashChain';
import { EventEmitter } from 'node:events';
import { WalCheckpointer } from './walCheckpointer';
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

const fdatasync = (fd: number): Promise<void> => new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));

/** The largest answer of readAll kept for the next follower asking the same (characters of JSON). */
const READ_CACHE_BYTES = 4 * 1024 * 1024;

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

/** A row of `events` as the log's hot read returns it: position, id, stream_id, revision, type, data, metadata, hash. */
type RawEventRow = [number, string, string, number, string, string, string, string];

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
  /** Runs this file's WAL checkpoints on its thread instead of this connection (on the event loop). */
  checkpointer?: WalCheckpointer;
}

/** An append committed to the WAL, answered once the WAL is on disk. */
interface Unsynced {
  settle: () => void;
  fail: (err: unknown) => void;
}

/**
 * Event store on one SQLite file in WAL mode. Concurrent appends are grouped into one
 * transaction (group commit): every append that arrives while a commit is being
 * prepared shares its fsync, yet each is checked and fails on its own.
 *
 * Durability (`full`) without blocking the event loop: SQLite runs with
 * `synchronous = NORMAL` (a commit writes the WAL, no fsync), and the store fdatasyncs the
 * WAL file itself on libuv's thread pool, answering the appends of every commit written
 * before that sync began once it returns. One sync is in flight at a time; commits made
 * meanwhile share the next one. Readers of the log (`readAll`, `subscribe`, `headPosition`)
 * see only events up to the last synced position, so no projection gets ahead of what a
 * power loss would keep. (WAL frames are checksummed in a chain, so a crash keeps a prefix of
 * the commits; SQLite syncs the WAL itself before every checkpoint.)
 */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly emitter = new EventEmitter();
  private pending: PendingAppend[] = [];
  private flushScheduled = false;
  private lastHash: string;
  /** Position of the last event committed to the WAL (not necessarily on disk yet). */
  private lastPosition: number;
  /** Position up to which the WAL is known to be on disk: what readers of the log see. */
  private durablePosition: number;
  private readonly syncEachCommit: boolean;
  private readonly walFile: string;
  private walFd: number | null = null;
  private unsynced: Unsynced[] = [];
  private syncing: Promise<void> | null = null;
  /** Set when an fsync failed: nothing more is accepted (the state of the WAL on disk is unknown). */
  private failed: Error | null = null;
  private closed = false;
  private lastRead: { after: number; upTo: number; max: number; rows: RawEventRow[] } | null = null;
  /** The log's hot read, one statement per batch size (see readAllStatement). */
  private readonly readAllStatements = new Map<number, Database.Statement<[number, number], RawEventRow>>();
  /** Callers of headPosition waiting for a sync to cover what was committed when they asked. */
  private headWaiters: { position: number; resolve: () => void }[] = [];
  private readonly metrics: Pick<Metrics, 'eventStoreAppend' | 'groupCommit'>;
  private readonly stmts: {
    streamHead: Database.Statement<[string], { revision: number }>;
    byId: Database.Statement<[string], { stream_id: string; revision: number; position: number }>;
    insert: Database.Statement<[number, string, string, number, string, string, string, string]>;
    readStream: Database.Statement<[string, number], EventRow>;
    readStreamOfTypes: Database.Statement<[string, number, string], EventRow>;
    head: Database.Statement<[], { position: number | null; hash: string | null }>;
    /** Each append of a group commit in a savepoint of its own (prepared once: no SQL compiled per append). */
    savepoint: Database.Statement<[]>;
    release: Database.Statement<[]>;
    rollbackTo: Database.Statement<[]>;
  };

  constructor(file: string, options: SqliteEventStoreOptions = {}) {
    this.db = new Database(file);
    this.metrics = options.metrics ?? noMetrics;
    this.db.pragma('journal_mode = WAL');
    // Commits never fsync on the event loop: `full` durability syncs the WAL off the thread (sync()).
    this.syncEachCommit = options.synchronous !== 'normal';
    this.walFile = `${file}-wal`;
    this.db.pragma('synchronous = NORMAL');
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
      readStreamOfTypes: this.db.prepare('SELECT * FROM events WHERE stream_id = ? AND revision >= ? AND type IN (SELECT value FROM json_each(?)) ORDER BY revision'),
      head: this.db.prepare('SELECT position, hash FROM events ORDER BY position DESC LIMIT 1'),
      savepoint: this.db.prepare('SAVEPOINT append'),
      release: this.db.prepare('RELEASE append'),
      rollbackTo: this.db.prepare('ROLLBACK TO append'),
    };
    if (options.checkpointer && file !== ':memory:' && file !== '') void options.checkpointer.manage(file, this.db);
    const head = this.stmts.head.get();
    this.lastPosition = head?.position ?? 0;
    this.durablePosition = this.lastPosition;
    this.lastHash = head?.hash ?? GENESIS_HASH;
    this.emitter.setMaxListeners(0);
  }

  /** The underlying database, for tools (verify, export) that read it directly. */
  get database(): Database.Database {
    return this.db;
  }

  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    if (this.failed) return Promise.reject(this.failed);
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
        this.stmts.savepoint.run();
        const savedPosition = position;
        const savedHash = hash;
        try {
          outcomes.push({ ok: true, result: this.appendOne(p, () => ++position, (h) => (hash = h), () => hash) });
          this.stmts.release.run();
        } catch (error) {
          this.stmts.rollbackTo.run();
          this.stmts.release.run();
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
    // Refused appends are answered at once; accepted ones once their commit is on disk.
    batch.forEach((p, i) => {
      const o = outcomes[i];
      if (!o.ok) p.reject(o.error);
    });
    this.unsynced.push({
      settle: () => {
        const now = process.hrtime.bigint();
        batch.forEach((p, i) => {
          const o = outcomes[i];
          if (!o.ok) return;
          this.metrics.eventStoreAppend(Number(now - p.startedAt) / 1e9);
          p.resolve(o.result);
        });
      },
      fail: (err) => batch.forEach((p, i) => outcomes[i].ok && p.reject(err)),
    });
    if (this.syncEachCommit) void this.sync();
    else this.synced(this.lastPosition, this.unsynced.splice(0));
  }

  /** Answers the appends of `commits`, now on disk up to `position`, and wakes the readers. */
  private synced(position: number, commits: Unsynced[]): void {
    if (position > this.durablePosition) this.durablePosition = position;
    for (const c of commits) c.settle();
    this.releaseHeadWaiters();
    this.emitter.emit('appended', this.durablePosition);
  }

  /** Wakes the callers of headPosition whose position is synced (all of them once nothing more can be). */
  private releaseHeadWaiters(): void {
    if (this.headWaiters.length === 0) return;
    const all = this.failed !== null || this.closed;
    const ready = this.headWaiters.filter((w) => all || w.position <= this.durablePosition);
    this.headWaiters = this.headWaiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve();
  }

  /**
   * One fdatasync of the WAL at a time, on the thread pool: it covers every commit written
   * before it started; commits written while it runs wait for the next one.
   */
  private sync(): Promise<void> {
    if (this.syncing) return this.syncing;
    if (this.unsynced.length === 0) return Promise.resolve();
    const commits = this.unsynced.splice(0);
    const upTo = this.lastPosition;
    this.syncing = (async () => {
      try {
        await fdatasync(this.walDescriptor());
      } catch (err) {
        // The kernel may have dropped the dirty pages: nothing written since can be promised.
        this.failed = new Error(`the event log could not be synced to disk (${(err as Error).message}); restart the service`);
        for (const c of [...commits, ...this.unsynced.splice(0)]) c.fail(this.failed);
        this.releaseHeadWaiters();
        return;
      } finally {
        this.syncing = null;
      }
      this.synced(upTo, commits);
      if (this.unsynced.length > 0) void this.sync();
    })();
    return this.syncing;
  }

  /** The WAL file, opened once (SQLite keeps it, and reuses it from the start, while this connection is open). */
  private walDescriptor(): number {
    if (this.walFd === null) {
      this.walFd = fs.openSync(this.walFile, 'r+');
      // The WAL's directory entry, once: a new file is found again after a power loss.
      const dir = fs.openSync(path.dirname(this.walFile), 'r');
      try {
        fs.fsyncSync(dir);
      } finally {
        fs.closeSync(dir);
      }
    }
    return this.walFd;
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

  async readStream(streamId: string, fromRevision = 0, types?: ReadonlySet<string>): Promise<RecordedEvent[]> {
    const rows = types === undefined ? this.stmts.readStream.all(streamId, fromRevision) : this.stmts.readStreamOfTypes.all(streamId, fromRevision, JSON.stringify([...types]));
    return rows.map((r) => this.toRecorded(r));
  }

  async readAll(afterPosition: number, maxCount: number): Promise<RecordedEvent[]> {
    return this.rowsAfter(afterPosition, maxCount).map(
      (r): RecordedEvent => ({
        id: r[1],
        streamId: r[2],
        revision: r[3],
        position: r[0],
        type: r[4],
        data: JSON.parse(r[5]) as unknown,
        metadata: JSON.parse(r[6]) as EventMetadata,
        hash: r[7],
      }),
    );
  }

  /**
   * Rows of the log after a position, up to the synced head. Every follower of the log (the
   * projections' feed, the process managers) wakes on the same sync and asks for the same
   * rows: the last answer is kept (the log below the synced head never changes) unless large,
   * and each caller parses its own copy of the events.
   */
  private rowsAfter(afterPosition: number, maxCount: number): RawEventRow[] {
    const upTo = this.durablePosition;
    // Nothing readers may see lies after the synced head: every follower asks once more after each batch.
    if (afterPosition >= upTo) return [];
    const last = this.lastRead;
    if (last && last.after === afterPosition && last.upTo === upTo && last.max === maxCount) return last.rows;
    const rows = this.readAllStatement(maxCount).all(afterPosition, upTo);
    let bytes = 0;
    for (const r of rows) bytes += r[5].length + r[6].length;
    this.lastRead = bytes <= READ_CACHE_BYTES ? { after: afterPosition, upTo, max: maxCount, rows } : null;
    return rows;
  }

  /**
   * `SELECT ... LIMIT n` with `n` written into the SQL, one statement per batch size (the
   * followers ask 500, a rebuild its span): SQLite (3.45 and later) reads a bound LIMIT when it
   * plans, and rebinding that parameter expires the statement, so `LIMIT ?` recompiled the read
   * at every call (~9 µs of CPU each here, against ~1.4 µs for the whole read of an empty range).
   * Rows as arrays (`raw`): the log's hot read builds no row object per event.
   */
  private readAllStatement(maxCount: number): Database.Statement<[number, number], RawEventRow> {
    // An integer only goes into the SQL (as SQLite refused a LIMIT that was not one).
    if (!Number.isSafeInteger(maxCount)) throw new RangeError(`readAll: maxCount must be an integer, not ${maxCount}`);
    let st = this.readAllStatements.get(maxCount);
    if (!st) {
      st = this.db
        .prepare<[number, number], RawEventRow>(`SELECT position, id, stream_id, revision, type, data, metadata, hash FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ${maxCount}`)
        .raw(true);
      if (this.readAllStatements.size >= 16) this.readAllStatements.clear();
      this.readAllStatements.set(maxCount, st);
    }
    return st;
  }


  /**
   * The head of the log as readers see it, including every append committed when asked (it
   * waits for their sync, a few ms at most): a caller that waits for the projections to reach
   * it counts appends made a moment ago without awaiting them (search events, link uses).
   */
  async headPosition(): Promise<number> {
    const committed = this.lastPosition;
    if (committed > this.durablePosition && !this.failed && !this.closed) {
      await new Promise<void>((resolve) => this.headWaiters.push({ position: committed, resolve }));
    }
    return this.durablePosition;
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
          if (this.durablePosition > position) onAppended();
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
    // Let queued appends commit, and their commits reach the disk, before closing.
    if (this.pending.length > 0) this.flush();
    this.closed = true;
    while (this.syncing || (this.unsynced.length > 0 && !this.failed)) await this.sync();
    this.releaseHeadWaiters();
    this.emitter.emit('appended', this.durablePosition);
    if (this.walFd !== null) fs.closeSync(this.walFd);
    this.walFd = null;
    this.db.close();
  }
}
