import express from 'express';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { expressServerOptions } from '../../src/http/expressServer';

describe('requests and responses made with the express app’s prototypes', () => {
  it('are served by the app with every express helper, and express leaves their prototypes as made', async () => {
    const app = express();
    const seen: { sameRequestPrototype: boolean; sameResponsePrototype: boolean; isIncoming: boolean }[] = [];
    app.put('/things/:id', (req, res) => {
      seen.push({
        sameRequestPrototype: Object.getPrototypeOf(req) === app.request,
        sameResponsePrototype: Object.getPrototypeOf(res) === app.response,
        isIncoming: req instanceof http.IncomingMessage && res instanceof http.ServerResponse,
      });
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => res.status(201).set('x-id', req.params.id).json({ id: req.params.id, body, query: req.query, ip: typeof req.ip }));
    });
    const options = expressServerOptions(app);
    expect(options.IncomingMessage).toBeDefined();
    const server = http.createServer(options, app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/things/a${i}?x=1`, { method: 'PUT', body: 'hello' });
        expect(res.status).toBe(201);
        expect(res.headers.get('x-id')).toBe(`a${i}`);
        expect(await res.json()).toEqual({ id: `a${i}`, body: 'hello', query: { x: '1' }, ip: 'string' });
      }
      const missing = await fetch(`http://127.0.0.1:${port}/nothing`);
      expect(missing.status).toBe(404);
      // Made with the app's prototypes: express found them in place (it would have set them otherwise, too,
      // so this also checks that node built the objects through the given constructors).
      expect(seen).toEqual(Array(3).fill({ sameRequestPrototype: true, sameResponsePrototype: true, isIncoming: true }));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('node makes the objects with the app’s prototypes before express sees them', async () => {
    const app = express();
    let prototypeOnArrival: unknown;
    const server = http.createServer(expressServerOptions(app), (req, res) => {
      prototypeOnArrival = Object.getPrototypeOf(req);
      app(req, res);
    });
    app.get('/', (_req, res) => res.send('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(await res.text()).toBe('ok');
      expect(prototypeOnArrival).toBe(app.request);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
