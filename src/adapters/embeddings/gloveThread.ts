/**
 * The GloVe-SIF ingest thread (see GloveSifEmbeddings): embeds the texts of documents off
 * the event loop. Loaded as compiled JS from dist/. The vectors' rows and scales are the
 * main thread's own (SharedArrayBuffers): only the vocabulary's map is built here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { gloveRanks } from './gloveVectors';
import { lowerThisThreadPriority } from '../../util/threadPriority';
import { GloveThreadAnswer, GloveThreadData, GloveThreadRequest, SifModel, sifEmbed } from './gloveSifEmbeddings';

function start(data: GloveThreadData): void {
  const port = parentPort;
  if (!port) return;
  // Background work: the event loop gets the cores first when both want them.
  lowerThisThreadPriority();
  const model: SifModel = {
    vectors: { header: data.header, rank: gloveRanks(data.vocabulary, data.header.count), scales: data.scales, rows: data.rows },
    weight: data.weight,
    ...(data.component ? { component: data.component } : {}),
  };
  const dims = data.header.dims;
  port.on('message', (m: GloveThreadRequest) => {
    try {
      const out = new Float32Array(m.texts.length * dims);
      m.texts.forEach((text, i) => {
        const t = text.length > data.maxChars ? text.slice(0, data.maxChars) : text;
        sifEmbed(model, t, out.subarray(i * dims, (i + 1) * dims));
      });
      port.postMessage({ type: 'vectors', id: m.id, vectors: out } satisfies GloveThreadAnswer, [out.buffer]);
    } catch (err) {
      port.postMessage({ type: 'error', id: m.id, message: err instanceof Error ? err.message : String(err) } satisfies GloveThreadAnswer);
    }
  });
  port.postMessage({ type: 'ready' } satisfies GloveThreadAnswer);
}

if (parentPort && workerData && typeof (workerData as GloveThreadData).vocabulary === 'string') start(workerData as GloveThreadData);
