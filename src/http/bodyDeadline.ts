import { NextFunction, Request, RequestHandler, Response } from 'express';
import { familyOf, HttpError, sendError } from './errors';

/**
 * Time limits for receiving a request body. Node's own `requestTimeout` is one value for
 * every route and answers in plain text, so it only backs this up: every request with a
 * body gets the short JSON limit from the moment its headers are in; a route that takes
 * large bodies (uploads) lengthens its own request's limit, after authentication, so an
 * anonymous client never gets the long one. Past the limit: 408 REQUEST_TIMEOUT in the
 * route's envelope, and the connection is closed (whatever is still arriving is not read).
 */

interface Deadline {
  startedAt: number;
  timer: NodeJS.Timeout;
  expire: () => void;
}

const deadlines = new WeakMap<Request, Deadline>();

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function bodyDeadline(timeoutMs: number): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req) || req.complete) return next();
    const done = () => {
      const d = deadlines.get(req);
      if (d) clearTimeout(d.timer);
      deadlines.delete(req);
    };
    const expire = () => {
      deadlines.delete(req);
      if (req.complete || req.destroyed) return;
      const seconds = Math.round((Date.now() - startedAt) / 100) / 10;
      if (res.headersSent) {
        // Answered already (e.g. 401 before reading), but the client is still trickling the body.
        req.destroy();
        return;
      }
      res.setHeader('Connection', 'close'); // node ends the socket once the answer is written
      res.on('finish', () => {
        // Node no longer aborts a request once it has been answered, even when its socket
        // closes: destroy it, so whoever reads the body (an upload) stops and cleans up.
        req.socket.once('close', () => req.destroy());
        req.socket.destroySoon();
      });
      const message = `The request body did not arrive within ${seconds} s.`;
      if (familyOf(appPath) === 'mcp') res.status(408).json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid request: ${message}` } });
      else sendError(req, res, new HttpError(408, 'REQUEST_TIMEOUT', message), appPath);
    };
    const startedAt = Date.now();
    const appPath = req.path; // the timer fires inside a mounted router, where req.path lost its prefix
    deadlines.set(req, { startedAt, timer: setTimeout(expire, timeoutMs), expire });
    // 'end': the body was read; 'close': the request is over (answered and drained, or the client left).
    req.once('end', done);
    req.once('close', done);
    next();
  };
}

/** Route middleware: this request's body may take up to `timeoutMs` (counted from its arrival). */
export function allowSlowBody(timeoutMs: number): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const d = deadlines.get(req);
    if (d) {
      clearTimeout(d.timer);
      d.timer = setTimeout(d.expire, Math.max(0, d.startedAt + timeoutMs - Date.now()));
    }
    next();
  };
}
