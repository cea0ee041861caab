import type express from 'express';
import http from 'node:http';
import type net from 'node:net';

/**
 * Options of `http.createServer` under which `app` serves requests without changing their
 * objects' prototypes. Express gives each request and response its app's prototype
 * (`Object.setPrototypeOf(req, app.request)`) as it enters; changing an object's prototype
 * after it was made sends V8 to slow paths for that object for the rest of its life (node's own
 * HTTP code included). Measured with one route (`node dist/bench/httpFloor.js`, 16 clients):
 * express cost ~170 µs of CPU per request that way, against ~25 µs when node makes the objects
 * with the app's prototypes from the start, as here (express then finds them already in place).
 * `req instanceof http.IncomingMessage` still holds: the app's prototypes inherit from node's.
 */
export function expressServerOptions(app: express.Express): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  // Node's two constructors are plain functions (called with `this` below); should a later node
  // make them classes, the server keeps node's own (slower, still correct).
  if (/^class\b/.test(Function.prototype.toString.call(http.IncomingMessage)) || /^class\b/.test(Function.prototype.toString.call(http.ServerResponse))) return {};
  const IncomingMessage = http.IncomingMessage as unknown as (this: unknown, socket: net.Socket) => void;
  const ServerResponse = http.ServerResponse as unknown as (this: unknown, req: http.IncomingMessage, options?: unknown) => void;
  function AppRequest(this: unknown, socket: net.Socket): void {
    IncomingMessage.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: unknown, req: http.IncomingMessage, options?: unknown): void {
    ServerResponse.call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return {
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
  };
}
