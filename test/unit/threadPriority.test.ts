import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { compiledPath } from '../../src/util/paths';
import { BACKGROUND_NICE } from '../../src/util/threadPriority';

/** The nice value of a thread, from /proc (field 19 of its stat line). */
const niceOf = (stat: string): number => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);

const linux = process.platform === 'linux' && fs.existsSync('/proc/thread-self');

(linux ? describe : describe.skip)('lowerThisThreadPriority', () => {
  it("lowers the calling thread's priority only, never raises one, and the process's other threads keep theirs", async () => {
    const before = niceOf(fs.readFileSync('/proc/thread-self/stat', 'utf8'));
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      const fs = require('node:fs');
      const { lowerThisThreadPriority } = require(workerData.module);
      const nice = () => { const s = fs.readFileSync('/proc/thread-self/stat', 'utf8'); return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[16]); };
      const start = nice();
      const lowered = lowerThisThreadPriority();
      const after = nice();
      const again = lowerThisThreadPriority(5); // asks for less than it has: unchanged
      parentPort.postMessage({ start, lowered, after, again, final: nice() });
    `;
    const w = new Worker(code, { eval: true, workerData: { module: compiledPath('src/util/threadPriority') } });
    const answer = await new Promise<{ start: number; lowered: boolean; after: number; again: boolean; final: number }>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    await w.terminate();
    expect(answer.lowered).toBe(true);
    expect(answer.after).toBe(Math.max(answer.start, BACKGROUND_NICE));
    expect(answer.again).toBe(true);
    expect(answer.final).toBe(answer.after);
    // This thread (and so the event loop of a server calling it from its workers) is untouched.
    expect(niceOf(fs.readFileSync('/proc/thread-self/stat', 'utf8'))).toBe(before);
  });
});
