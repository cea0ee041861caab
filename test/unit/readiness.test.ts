import Ajv2020 from 'ajv/dist/2020';
import type { Request, Response } from 'express';
import { AppContext } from '../../src/app/context';
import { WarmupState } from '../../src/app/warmup';
import { readinessHandler } from '../../src/http/readiness';
import { openApiDocument } from '../../src/http/openapi/generate';
import { VectorModels } from '../../src/ports/searchIndex';
import { closed } from '../support/openapiSchema';

/**
 * GET /readyz in each of its states (a server is ready in the HTTP tests, so the others are
 * produced here from the handler itself), each answer validated against the schema
 * /openapi.json documents for its status, with unknown fields refused.
 */
describe('/readyz: every state answers what the API description says', () => {
  const doc = openApiDocument([], { version: 'test', serverUrl: 'http://localhost' });
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const schemaOf = (status: number) => closed((doc.paths['/readyz'].get.responses as any)[String(status)].content['application/json'].schema);

  async function answer(state: { warmup: WarmupState; error?: string; ms?: number; head: number; projected: number; models?: VectorModels }) {
    const ctx = {
      eventStore: { headPosition: async () => state.head },
      runner: { lowWatermark: () => state.projected },
      warmup: { state: state.warmup, error: state.error, ms: state.ms },
      searchIndex: { vectorModels: async () => state.models ?? { documents: 0 } },
    } as unknown as AppContext;
    const out: { status?: number; body?: any } = {};
    // What respond() uses of a response: express's status/json, or the headers and end of node's.
    const headers = new Map<string, unknown>();
    const res = {
      req: { method: 'GET', headers: {} },
      set statusCode(code: number) {
        out.status = code;
      },
      status(code: number) {
        out.status = code;
        return res;
      },
      json(body: unknown) {
        out.body = body;
        return res;
      },
      hasHeader: (name: string) => headers.has(name.toLowerCase()),
      setHeader: (name: string, value: unknown) => void headers.set(name.toLowerCase(), value),
      end(text?: string) {
        out.body = text === undefined ? undefined : JSON.parse(text);
        expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
      },
    };
    await readinessHandler(ctx)({} as Request, res as unknown as Response, () => undefined);
    const valid = ajv.validate(schemaOf(out.status ?? 0), out.body);
    expect([out.body, valid ? null : ajv.errorsText()]).toEqual([out.body, null]);
    return out as { status: number; body: any };
  }

  it('warming: the model still loading', async () => {
    const r = await answer({ warmup: 'warming', head: 40, projected: 40 });
    expect(r).toEqual({ status: 503, body: { status: 'warming', head: 40, projected: 40, embeddings: 'warming' } });
  });

  it("warming: the model's load failed, with the reason", async () => {
    const r = await answer({ warmup: 'failed', error: 'vectors file unreadable', head: 3, projected: 3 });
    expect(r).toEqual({ status: 503, body: { status: 'warming', head: 3, projected: 3, embeddings: 'failed', embeddingsError: 'vectors file unreadable' } });
  });

  it('catching_up: the projections more than 1,000 events behind the log', async () => {
    const r = await answer({ warmup: 'ready', ms: 250, head: 5000, projected: 3999 });
    expect(r).toEqual({ status: 503, body: { status: 'catching_up', head: 5000, projected: 3999, embeddings: 'ready', embeddingsWarmupMs: 250 } });
  });

  it('ready, and ready during an embedding model change with its progress', async () => {
    expect((await answer({ warmup: 'ready', ms: 90, head: 5000, projected: 4000 })).body).toEqual({ status: 'ready', head: 5000, projected: 4000, embeddings: 'ready', embeddingsWarmupMs: 90 });
    const models: VectorModels = { active: { modelId: 'local:glove-sif-100d', dimensions: 100 }, next: { modelId: 'local:use-lite-512', dimensions: 512, documents: 2 }, documents: 7 };
    const r = await answer({ warmup: 'ready', ms: 90, head: 12, projected: 12, models });
    expect(r.status).toBe(200);
    expect(r.body.reembedding).toEqual({ from: 'local:glove-sif-100d', to: 'local:use-lite-512', done: 2, total: 7 });
  });

  it('the schemas can fail: an unknown field, a wrong status word, a malformed progress', () => {
    const body = { status: 'ready', head: 1, projected: 1, embeddings: 'ready' };
    expect(ajv.validate(schemaOf(200), body)).toBe(true);
    expect(ajv.validate(schemaOf(200), { ...body, extra: 1 })).toBe(false);
    expect(ajv.validate(schemaOf(503), { ...body, status: 'starting' })).toBe(false);
    expect(ajv.validate(schemaOf(200), { ...body, reembedding: { from: 'a', to: 'b', done: 1 } })).toBe(false);
  });
});
