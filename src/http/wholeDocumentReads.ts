import { NextFunction, Request, RequestHandler, Response } from 'express';
import * as t from 'io-ts';
import { respond } from './responses';

/**
 * How many requests may build and send an answer holding a whole document at once (its text,
 * its content, its metadata or an instruction set as of a time: each reads the document's
 * events and holds its text, up to tens of MB, until the client has taken the answer). The
 * others wait in turn, holding nothing but their connection. Unbounded, sixteen reads of a 20 MB
 * text at once took the server to 2.8 GB and held /healthz for 1.9 s; a few of a 50 MB text
 * would pass the JavaScript heap's limit and end the process (third hostile look, issue 13).
 *
 * A turn ends when the answer is finished or its connection closes; a request whose client
 * leaves while it waits gives up its place. A client that stops taking its answer cannot keep
 * its turn (fourth hostile look: two clients that never read held every turn of the process):
 * the answer is written in slices, and a client that takes none of it for `stallMs` has its
 * connection closed, which frees the answer's memory and the turn. Nor can one that takes a slice
 * now and then (a slice every 9 s kept a turn for as long as it liked): once `stallMs` has
 * passed, the answer must have averaged `minBytesPerS` since it began, or its connection is
 * closed. One caller (a user, or an
 * address before sign-in) holds at most half of the turns (at least one), so another tenant's
 * reads always find a turn that this caller cannot take; a waiting request whose caller holds
 * its share lets the next caller's request go first.
 */
export class Turns {
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  private readonly waiting: { caller: string; begin: () => void }[] = [];
  /** The most turns one caller holds at once. */
  readonly perCaller: number;

  constructor(
    private readonly atOnce: number,
    /** How long an answer's client may take nothing of it before its connection is closed. */
    readonly stallMs = 10_000,
    /** The average rate an answer must keep once `stallMs` has passed since it began (see `progressDeadline`). */
    readonly minBytesPerS = 64 * 1024,
  ) {
    this.perCaller = Math.max(1, Math.ceil(atOnce / 2));
  }

  /**
   * Calls `start` now or once a turn is free for `caller`; `start` gets the function that ends
   * its turn (idempotent). Returns a function that gives up a place not yet started.
   */
  take(caller: string, start: (done: () => void) => void): () => void {
    let started = false;
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      this.running -= 1;
      const held = (this.runningBy.get(caller) ?? 1) - 1;
      if (held > 0) this.runningBy.set(caller, held);
      else this.runningBy.delete(caller);
      this.startWaiting();
    };
    const entry = {
      caller,
      begin: () => {
        started = true;
        this.running += 1;
        this.runningBy.set(caller, (this.runningBy.get(caller) ?? 0) + 1);
        start(done);
      },
    };
    if (this.running < this.atOnce && this.heldBy(caller) < this.perCaller) {
      entry.begin();
      return () => undefined;
    }
    this.waiting.push(entry);
    return () => {
      if (started) return;
      const i = this.waiting.indexOf(entry);
      if (i >= 0) this.waiting.splice(i, 1);
    };
  }

  private heldBy(caller: string): number {
    return this.runningBy.get(caller) ?? 0;
  }

  /** Starts waiting requests, first come first served among callers under their share. */
  private startWaiting(): void {
    while (this.running < this.atOnce) {
      const i = this.waiting.findIndex((w) => this.heldBy(w.caller) < this.perCaller);
      if (i < 0) return;
      const [next] = this.waiting.splice(i, 1);
      next.begin();
    }
  }

  /** Requests building or sending an answer now, and waiting for a turn. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

/** The turns of a response that holds one (set when its turn starts). */
const turnOfResponse = new WeakMap<Response, Turns>();

/** Who a request counts against: the signed-in user, else the client's address. */
function callerOf(req: Request): string {
  return req.auth ? `user:${req.auth.userId}` : `ip:${req.ip ?? 'unknown'}`;
}

/** Route middleware: the request's answer is built and sent in one of `turns`' turns (only when `applies`, e.g. with `asOf`). */
export function wholeDocumentRead(turns: Turns, applies: (req: Request) => boolean = () => true): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!applies(req)) return next();
    // The turn (or the place in line) ends when the answer closes: after 'finish' too (handed
    // over), or when the client left or was dropped. An answer queued behind another on its
    // connection (pipelined requests) never gets the socket when the client closes it, and never
    // closes: the connection's own close ends its turn too.
    const socket = req.socket;
    let done: (() => void) | undefined;
    const giveUp = turns.take(callerOf(req), (end) => {
      done = end;
      if (res.writableEnded || res.destroyed || socket.destroyed) end();
      else {
        turnOfResponse.set(res, turns);
        next();
      }
    });
    const release = () => {
      socket.off('close', release); // a kept-alive connection carries many requests: one listener each, removed
      if (done) done();
      else giveUp();
    };
    res.once('close', release);
    socket.once('close', release);
  };
}

/** Bytes handed to the connection at a time; the next slice goes once the connection has taken them. */
const SLICE_BYTES = 256 * 1024;

/**
 * When an answer that began at `startedAt` and of which the client has taken `taken` bytes falls
 * below its floor: it must average `minBytesPerS` from its start, checked once `graceMs` have
 * passed (a slow start, a large first slice in the socket's buffers, are forgiven until then).
 * Bounds the whole answer: `n` bytes are taken within max(graceMs, n / minBytesPerS) or dropped.
 */
export function progressDeadline(startedAt: number, graceMs: number, minBytesPerS: number, taken: number): number {
  return startedAt + Math.max(graceMs, (taken / minBytesPerS) * 1000);
}

/**
 * Resolves true once `res` drained, false when it or its connection closed, it took nothing for
 * `ms`, or `deadline` (epoch ms) passed first.
 */
function drained(res: Response, ms: number, deadline = Infinity): Promise<boolean> {
  const socket = res.req.socket;
  return new Promise((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      socket.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => finish(true);
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), Math.max(0, Math.min(ms, deadline - Date.now())));
    res.on('drain', onDrain);
    res.on('close', onClose);
    socket.on('close', onClose);
  });
}

/**
 * Sends a 200 JSON answer holding a whole document. In a turn of `wholeDocumentRead`, it is
 * written slice by slice as the client takes it; a client that takes nothing for the turns'
 * `stallMs` loses its connection (the answer is dropped, the turn freed). Elsewhere (a route
 * whose request did not need a turn) it is `respond`.
 */
export function respondWhole<C extends t.Mixed>(res: Response, codec: C, body: t.OutputOf<C>): void {
  const turns = turnOfResponse.get(res);
  if (!turns) return respond(res, codec, body);
  let bytes: Buffer | undefined = Buffer.from(JSON.stringify(body), 'utf8');
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', bytes.length);
  if (res.req.method === 'HEAD') {
    res.end();
    return;
  }
  const startedAt = Date.now();
  const send = async () => {
    for (let at = 0; bytes && at < bytes.length; at += SLICE_BYTES) {
      if (res.destroyed || res.req.socket.destroyed) return;
      const end = Math.min(bytes.length, at + SLICE_BYTES);
      if (res.write(bytes.subarray(at, end))) continue;
      // What the client has taken: all written but what still waits in this process's buffers.
      const deadline = progressDeadline(startedAt, turns.stallMs, turns.minBytesPerS, end - res.writableLength);
      if (Date.now() >= deadline || !(await drained(res, turns.stallMs, deadline))) {
        bytes = undefined;
        res.destroy(); // the client took nothing for stallMs, fell below the floor, or left: drop the answer, free the turn
        return;
      }
    }
    res.end();
  };
  void send().finally(() => (bytes = undefined));
}

const turnsOf = new WeakMap<object, Turns>();

/** The turns of one application (its context), shared by every route that reads a whole document. */
export function wholeDocumentTurns(ctx: { config: { wholeDocumentReadsAtOnce: number; wholeDocumentStallMs: number; wholeDocumentMinBytesPerS: number } }): Turns {
  let t = turnsOf.get(ctx);
  if (!t) {
    t = new Turns(ctx.config.wholeDocumentReadsAtOnce, ctx.config.wholeDocumentStallMs, ctx.config.wholeDocumentMinBytesPerS);
    turnsOf.set(ctx, t);
  }
  return t;
}

/** Applies to a request asking for a past time (`?asOf=`). */
export const asksForThePast = (req: Request): boolean => req.query.asOf !== undefined;
