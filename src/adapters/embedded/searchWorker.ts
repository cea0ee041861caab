/**
 * Worker-thread side of WorkerSearchIndex (workerSearchIndex.ts): owns one
 * EmbeddedSearchIndex on the index file and answers the port's calls sent by the main
 * thread. A read (search, count) jumps the waiting writes (index updates from the
 * projection), and while both wait they take turns (CallQueue): a search waits for at most
 * one update, not a burst of them, and updates are never starved. Each call runs to
 * completion (the index's work is synchronous), then the queue is looked at again, so calls
 * arriving meanwhile are considered before the next one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { VectorModelChangedError } from '../../ports/searchIndex';
import { EmbeddedSearchIndex, type EmbeddedSearchIndexOptions } from './embeddedSearchIndex';
import { CallQueue, type WarmUpSample, type WorkerReply, type WorkerRequest } from './searchWorkerProtocol';

export interface SearchWorkerData {
  filePath: string;
  options: EmbeddedSearchIndexOptions;
}

/**
 * Runs the calls a first upload and search make (index a document's chunks, move the
 * checkpoint, search, count, update fields, delete) on a throwaway in-memory index of this
 * thread, so that V8 has compiled this thread's copy of that code before a real document
 * arrives (the start-up rehearsal's own index ran on the main thread: this thread's code was
 * still cold at the first upload). No file is opened, and the live index is not touched.
 */
async function warmUp(sample: WarmUpSample, options: EmbeddedSearchIndexOptions): Promise<void> {
  const scratch = new EmbeddedSearchIndex(':memory:', options);
  try {
    const documentId = sample.chunks[0]?.documentId;
    if (!documentId) return;
    await scratch.setCheckpoint(1);
    await scratch.upsertDocument(documentId, sample.chunks);
    await scratch.setCheckpoint(2);
    await scratch.search(sample.query);
    await scratch.search({ ...sample.query, filters: { ...sample.query.filters, documentIds: [documentId] } });
    await scratch.countDocuments(sample.query.filters);
    await scratch.updateDocumentFields(documentId, { documentTitle: `${sample.chunks[0].documentTitle} (renamed)` });
    await scratch.deleteDocument(documentId);
    await scratch.setCheckpoint(3);
  } finally {
    await scratch.close();
  }
}

function main(): void {
  const port = parentPort;
  if (!port) throw new Error('searchWorker runs in a worker thread');
  const { filePath, options } = workerData as SearchWorkerData;
  const index = new EmbeddedSearchIndex(filePath, options);
  const queue = new CallQueue<WorkerRequest>();
  let scheduled = false;
  /** The close request, answered once everything sent before it is answered. */
  let closeRequest: WorkerRequest | undefined;

  const run = async (req: WorkerRequest): Promise<unknown> => {
    switch (req.method) {
      case 'search':
        return index.search(req.args[0]);
      case 'countDocuments':
        return index.countDocuments(req.args[0]);
      case 'stats':
        return index.stats();
      case 'getCheckpoint':
        return index.getCheckpoint();
      case 'upsertDocument':
        return index.upsertDocument(req.args[0], req.args[1]);
      case 'deleteDocument':
        return index.deleteDocument(req.args[0]);
      case 'deleteWorkspace':
        return index.deleteWorkspace(req.args[0]);
      case 'updateDocumentFields':
        return index.updateDocumentFields(req.args[0], req.args[1]);
      case 'setCheckpoint':
        return index.setCheckpoint(req.args[0]);
      case 'clear':
        return index.clear();
      case 'vectorModels':
        return index.vectorModels();
      case 'beginVectorModel':
        return index.beginVectorModel(req.args[0]);
      case 'putVectors':
        return index.putVectors(req.args[0], req.args[1], req.args[2]);
      case 'switchVectorModel':
        return index.switchVectorModel(req.args[0]);
      case 'dropVectorModel':
        return index.dropVectorModel(req.args[0]);
      case 'nameLegacyModel':
        return index.nameLegacyModel(req.args[0]);
      case 'warmUp':
        return warmUp(req.args[0], options);
      case 'crash':
        // Tests: an uncaught error, as a bug or a native failure would end the thread.
        setImmediate(() => {
          throw new Error('search worker crash requested');
        });
        return undefined;
    }
  };

  // One call at a time: `scheduled` stays set until the running call has been answered.
  const drain = async (): Promise<void> => {
    const req = queue.shift();
    if (!req) {
      scheduled = false;
      if (closeRequest) {
        const id = closeRequest.id;
        closeRequest = undefined;
        await index.close();
        port.postMessage({ id, ok: true, value: undefined } satisfies WorkerReply);
      }
      return;
    }
    let reply: WorkerReply;
    try {
      reply = { id: req.id, ok: true, value: await run(req) };
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      const models = e instanceof VectorModelChangedError ? { queryModel: e.queryModel, activeModel: e.activeModel } : {};
      reply = { id: req.id, ok: false, error: { name: e.name, message: e.message, ...models } };
    }
    port.postMessage(reply);
    scheduled = false;
    schedule();
  };

  const schedule = (): void => {
    if (scheduled || (queue.size === 0 && !closeRequest)) return;
    scheduled = true;
    // setImmediate: messages that arrived meanwhile are queued (and sorted) before the next call runs.
    setImmediate(() => void drain());
  };

  port.on('message', (req: WorkerRequest) => {
    if (req.method === 'close') closeRequest = req;
    else queue.push(req);
    schedule();
  });
  port.postMessage({ ready: true, stats: index.stats() });
}

main();
