import { EventEmitter } from 'node:events';
import { Request, Response } from 'express';
import { Turns, wholeDocumentRead } from '../../src/http/wholeDocumentReads';

/** A request as the middleware sees it: its connection ('close' when it ends). */
function fakeRequest(extra: object = {}): Request & { socket: EventEmitter & { destroyed: boolean } } {
  return { socket: Object.assign(new EventEmitter(), { destroyed: false }), ...extra } as unknown as Request & { socket: EventEmitter & { destroyed: boolean } };
}

/** A response as the middleware sees it: 'close' once answered or left. */
function fakeResponse(): Response & EventEmitter {
  return Object.assign(new EventEmitter(), { writableEnded: false, destroyed: false }) as unknown as Response & EventEmitter;
}

describe('whole-document reads: a few at once, the others in turn', () => {
  it('starts at most `atOnce`; each end lets the next waiting one start, once', () => {
    const turns = new Turns(2);
    const ends: (() => void)[] = [];
    const started: number[] = [];
    for (let i = 0; i < 5; i++) turns.take(`caller ${i}`, (done) => (started.push(i), ends.push(done)));
    expect(started).toEqual([0, 1]);
    expect(turns.load).toEqual({ running: 2, waiting: 3 });
    ends[0]();
    ends[0](); // a second end of the same turn frees nothing more
    expect(started).toEqual([0, 1, 2]);
    expect(turns.load).toEqual({ running: 2, waiting: 2 });
    ends[1]();
    ends[2]();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    ends[3]();
    ends[4]();
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a request whose client leaves while it waits gives up its place; one that left when its turn comes ends it at once', () => {
    const turns = new Turns(1);
    const mw = wholeDocumentRead(turns);
    const req = fakeRequest();
    const calls: string[] = [];
    const first = fakeResponse();
    const leaves = fakeResponse();
    const gone = fakeResponse();
    const last = fakeResponse();
    mw(req, first, () => calls.push('first'));
    mw(req, leaves, () => calls.push('leaves'));
    mw(req, gone, () => calls.push('gone'));
    mw(req, last, () => calls.push('last'));
    expect(calls).toEqual(['first']);
    expect(turns.load).toEqual({ running: 1, waiting: 3 });
    leaves.emit('close'); // left while waiting
    expect(turns.load).toEqual({ running: 1, waiting: 2 });
    Object.assign(gone, { destroyed: true }); // its connection is gone, not yet seen
    first.emit('close'); // answered
    expect(calls).toEqual(['first', 'last']);
    expect(turns.load).toEqual({ running: 1, waiting: 0 });
    last.emit('close');
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('one caller holds at most half of the turns (at least one): the others find a turn it cannot take, and go first when it waits', () => {
    expect([1, 2, 3, 4].map((n) => new Turns(n).perCaller)).toEqual([1, 1, 2, 2]);
    const turns = new Turns(4);
    const ends = new Map<string, () => void>();
    const started: string[] = [];
    const take = (caller: string, name: string) => turns.take(caller, (done) => (started.push(name), ends.set(name, done)));
    take('hog', 'hog 1');
    take('hog', 'hog 2');
    take('hog', 'hog 3');
    take('hog', 'hog 4');
    expect(started).toEqual(['hog 1', 'hog 2']);
    take('other', 'other 1');
    take('third', 'third 1');
    expect(started).toEqual(['hog 1', 'hog 2', 'other 1', 'third 1']);
    take('other', 'other 2');
    // A turn of another caller ends: the hog waited first but holds its share, so 'other 2' goes.
    ends.get('third 1')!();
    expect(started.at(-1)).toBe('other 2');
    // One of the hog's own turns ends: its next request starts.
    ends.get('hog 1')!();
    expect(started.at(-1)).toBe('hog 3');
    expect(turns.load).toEqual({ running: 4, waiting: 1 });
  });

  it("the connection's close ends a turn or a place whose answer never closes (queued behind another on that connection)", () => {
    const turns = new Turns(1);
    const mw = wholeDocumentRead(turns);
    const calls: string[] = [];
    const first = fakeRequest();
    const queued = fakeRequest();
    const next = fakeRequest();
    mw(first, fakeResponse(), () => calls.push('first'));
    mw(queued, fakeResponse(), () => calls.push('queued'));
    const nextRes = fakeResponse();
    mw(next, nextRes, () => calls.push('next'));
    expect(calls).toEqual(['first']);
    first.socket.emit('close'); // its answer never says 'close'
    expect(calls).toEqual(['first', 'queued']);
    queued.socket.emit('close');
    expect(calls).toEqual(['first', 'queued', 'next']);
    expect(turns.load).toEqual({ running: 1, waiting: 0 });
    // One listener per request on a kept-alive connection, removed when its answer closes.
    expect(next.socket.listenerCount('close')).toBe(1);
    nextRes.emit('close');
    expect(next.socket.listenerCount('close')).toBe(0);
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('passes a request it does not apply to straight on', () => {
    const turns = new Turns(1);
    const mw = wholeDocumentRead(turns, (r) => (r as unknown as { past: boolean }).past);
    const calls: string[] = [];
    mw(fakeRequest({ past: true }), fakeResponse(), () => calls.push('past'));
    mw(fakeRequest({ past: false }), fakeResponse(), () => calls.push('now'));
    mw(fakeRequest({ past: true }), fakeResponse(), () => calls.push('past, waiting'));
    expect(calls).toEqual(['past', 'now']);
  });
});
