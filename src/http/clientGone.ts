import { Response } from 'express';

/**
 * A signal aborted when the client of `res` leaves before its answer is finished (its connection
 * closed), so work still waiting for it (a search waiting for its turn) is not done for nobody.
 */
export function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  const socket = res.req.socket;
  if (socket.destroyed || res.destroyed) {
    controller.abort(); // gone already
    return controller.signal;
  }
  const onClose = () => {
    res.off('close', onClose);
    socket.off('close', onClose);
    if (!res.writableFinished) controller.abort();
  };
  res.once('close', onClose);
  // An answer queued behind another on its connection (pipelining) never closes itself: its connection's close ends it.
  socket.once('close', onClose);
  return controller.signal;
}
