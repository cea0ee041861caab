import { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * How many requests may build and send an answer holding a whole document at once (its text,
 * its content, its metadata or an instruction set as of a time: each reads the document's
 * events and holds its text, up to tens of MB, until the client has taken the answer). The
 * others wait in turn, holding nothing but their connection. Unbounded, sixteen reads of a 20 MB
 * text at once took the server to 2.8 GB and held /healthz for 1.9 s; a few of a 50 MB text
 * would pass the JavaScript heap's limit and end the process (third hostile look, issue 13).
 *
 * A turn ends when the answer is finished or its connection closes; a request whose client
 * leaves while it waits gives up its place.
 */
export class Turns {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly atOnce: number) {}

  /** Calls `start` now or once a turn is free; `start` gets the function that ends its turn (idempotent). Returns a function that gives up a place not yet started. */
  take(start: (done: () => void) => void): () => void {
    let started = false;
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      this.running -= 1;
      this.waiting.shift()?.();
    };
    const begin = () => {
      started = true;
      this.running += 1;
      start(done);
    };
    if (this.running < this.atOnce) {
      begin();
      return () => undefined;
    }
    this.waiting.push(begin);
    return () => {
      if (started) return;
      const i = this.waiting.indexOf(begin);
      if (i >= 0) this.waiting.splice(i, 1);
    };
  }

  /** Requests building or sending an answer now, and waiting for a turn. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

/** Route middleware: the request's answer is built and sent in one of `turns`' turns (only when `applies`, e.g. with `asOf`). */
export function wholeDocumentRead(turns: Turns, applies: (req: Request) => boolean = () => true): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!applies(req)) return next();
    const giveUp = turns.take((done) => {
      res.once('close', done); // after 'finish' too: the answer was handed over, or the client left
      if (res.writableEnded || res.destroyed) done();
      else next();
    });
    res.once('close', giveUp);
  };
}

const turnsOf = new WeakMap<object, Turns>();

/** The turns of one application (its context), shared by every route that reads a whole document. */
export function wholeDocumentTurns(ctx: { config: { wholeDocumentReadsAtOnce: number } }): Turns {
  let t = turnsOf.get(ctx);
  if (!t) {
    t = new Turns(ctx.config.wholeDocumentReadsAtOnce);
    turnsOf.set(ctx, t);
  }
  return t;
}

/** Applies to a request asking for a past time (`?asOf=`). */
export const asksForThePast = (req: Request): boolean => req.query.asOf !== undefined;
