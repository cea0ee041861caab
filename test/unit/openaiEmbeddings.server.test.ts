import http from 'node:http';
import { AddressInfo } from 'node:net';
import { OpenAIEmbeddings } from '../../src/adapters/embeddings/openaiEmbeddings';

type Behaviour = 'drop' | 'hang' | 'retry-after-ms' | 'retry-after-date' | 'bad-request' | 'ok';

/** A local OpenAI-compatible server that misbehaves as told, one behaviour per request; the real `openai` client talks to it. */
async function misbehavingServer(script: Behaviour[]) {
  const seen: Behaviour[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const b = script.shift() ?? 'ok';
      seen.push(b);
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { input: string[] };
      if (b === 'drop') return req.socket.destroy();
      if (b === 'hang') return; // never answers: the client's time-out fires
      if (b === 'retry-after-ms') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '1234', 'retry-after': '60' });
        return res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
      }
      if (b === 'retry-after-date') {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': new Date(Date.now() + 5000).toUTCString() });
        return res.end(JSON.stringify({ error: { message: 'busy' } }));
      }
      if (b === 'bad-request') {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'bad input' } }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', model: 'm', data: body.input.map((_, index) => ({ object: 'embedding', index, embedding: [index + 1, 1, 0] })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('OpenAIEmbeddings against a misbehaving local server (real openai client)', () => {
  it('retries a dropped connection and a time-out, honours retry-after-ms and a Retry-After date', async () => {
    const server = await misbehavingServer(['drop', 'hang', 'retry-after-ms', 'retry-after-date', 'ok']);
    const sleeps: number[] = [];
    try {
      const p = new OpenAIEmbeddings({
        baseURL: server.baseURL,
        apiKey: 'k',
        dimensions: 3,
        timeoutMs: 300,
        baseDelayMs: 1,
        maxDelayMs: 10_000,
        maxRetries: 5,
        random: () => 0,
        sleep: async (ms) => {
          sleeps.push(ms);
        },
      });
      const v = await p.embed(['a', 'b']);
      expect(v).toHaveLength(2);
      expect(v[1][0] / v[1][1]).toBeCloseTo(2, 5);
      expect(server.seen).toEqual(['drop', 'hang', 'retry-after-ms', 'retry-after-date', 'ok']);
      expect(sleeps[2]).toBe(1234); // retry-after-ms wins over Retry-After: 60
      expect(sleeps[3]).toBeGreaterThan(3000);
      expect(sleeps[3]).toBeLessThanOrEqual(5000);
    } finally {
      await server.close();
    }
  }, 20_000);

  it('does not retry a 400', async () => {
    const server = await misbehavingServer(['bad-request', 'ok']);
    try {
      const p = new OpenAIEmbeddings({ baseURL: server.baseURL, apiKey: 'k', dimensions: 3, sleep: async () => undefined });
      await expect(p.embed(['a'])).rejects.toThrow(/bad input/);
      expect(server.seen).toEqual(['bad-request']);
    } finally {
      await server.close();
    }
  });

  it('fails with a clear message for a model whose dimensions are unknown', () => {
    expect(() => new OpenAIEmbeddings({ model: 'my-local-model', apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1' })).toThrow(/dimensions of embedding model my-local-model are not known: set KB_OPENAI_DIMENSIONS/);
    expect(new OpenAIEmbeddings({ model: 'my-local-model', apiKey: 'k', dimensions: 768, baseURL: 'http://127.0.0.1:1/v1' }).dimensions).toBe(768);
  });
});
