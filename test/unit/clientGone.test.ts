import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { clientGone } from '../../src/http/clientGone';

/** Just what clientGone reads of a response: its events, its state and its connection. */
function fakeResponse() {
  const socket = Object.assign(new EventEmitter(), { destroyed: false });
  const res = Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false, writableFinished: false, req: { socket } });
  return { res: res as unknown as Response, raw: res, socket };
}

describe('clientGone', () => {
  it('aborts when the client leaves, and when the answer has been sent (a timed-out tool call): nobody waits any more', () => {
    const left = fakeResponse();
    const s1 = clientGone(left.res);
    expect(s1.aborted).toBe(false);
    left.socket.emit('close');
    expect(s1.aborted).toBe(true);

    const answered = fakeResponse();
    const s2 = clientGone(answered.res);
    answered.raw.writableEnded = true;
    answered.raw.writableFinished = true;
    answered.raw.emit('close');
    expect(s2.aborted).toBe(true);
    // Its listener on the kept-alive connection is gone with it.
    expect(answered.socket.listenerCount('close')).toBe(0);
  });

  it('is aborted at once for a response already answered or a connection already closed', () => {
    const done = fakeResponse();
    done.raw.writableEnded = true;
    expect(clientGone(done.res).aborted).toBe(true);
    const closed = fakeResponse();
    closed.socket.destroyed = true;
    expect(clientGone(closed.res).aborted).toBe(true);
  });
});
