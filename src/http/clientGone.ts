import { Response } from 'express';

/**
 * A signal aborted once nobody waits for the work of `res` any more: its client left (its
 * connection closed) or it was answered (a tool call answered -32603 when its search timed out
 * while the search still waited for its turn). A search still waiting for its turn then gives up
 * its place instead of running for nobody.
 */
export function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  const socket = res.req.socket;
  if (socket.destroyed || res.destroyed || res.writableEnded) {
    controller.abort(); // gone or answered already
    return controller.signal;
  }
  const onClose = () => {
    res.off('close', onClose);
    socket.off('close', onClose);
    controller.abort();
  };
  res.once('close', onClose);
  // An answer queued behind another on its connection (pipelining) never closes itself: its connection's close ends it.
  socket.once('close', onClose);
  return controller.signal;
}
