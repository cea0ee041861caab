/**
 * Sealing document text and vectors before they are appended (AES-256-GCM per field, the
 * encrypting event store's `seal`): µs per sealed field, for chunk-sized text and for an
 * encoded 100-d vector, and the same fields opened again.
 *
 *   npm run bench -- seal      (or node dist/bench/seal.js)
 */
import { randomBytes } from 'node:crypto';
import { open, seal } from '../src/adapters/encryption/encryptingEventStore';
import { encodeVector } from '../src/domain/document/events';

export async function benchSeal(): Promise<void> {
  const key = randomBytes(32);
  const documentId = '0b7c2f4e-6a1d-4c53-9d8e-2f1a3b4c5d6e';
  const aad = Buffer.from(documentId, 'utf8');
  const n = 5000;
  const kinds: [string, string[]][] = [
    ['chunk text (~800 characters)', Array.from({ length: n }, (_, i) => `${'retrieval needs stable chunk boundaries '.repeat(20)}${i}`)],
    ['encoded 100-d vector', Array.from({ length: n }, () => encodeVector(Float32Array.from({ length: 100 }, () => Math.random() - 0.5)))],
  ];
  for (const [label, values] of kinds) {
    // The first round warms the code up; the best of the next three is printed.
    let sealUs = Infinity;
    let openUs = Infinity;
    for (let round = 0; round < 4; round++) {
      let t = process.hrtime.bigint();
      const sealed = values.map((v) => seal(key, v, aad));
      const s = Number(process.hrtime.bigint() - t) / 1000 / n;
      t = process.hrtime.bigint();
      for (const v of sealed) open(key, v, documentId);
      const o = Number(process.hrtime.bigint() - t) / 1000 / n;
      if (round > 0) {
        sealUs = Math.min(sealUs, s);
        openUs = Math.min(openUs, o);
      }
    }
    console.log(`  ${label}: seal ${sealUs.toFixed(1)} µs, open ${openUs.toFixed(1)} µs per field (${n} fields, best of 3 rounds)`);
  }
}

if (require.main === module) {
  benchSeal().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
