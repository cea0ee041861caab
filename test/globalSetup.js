// Compile the project once before the tests: HTTP tests start the real server
// (node dist/src/main.js) and worker threads load compiled files from dist/.
const { execFileSync } = require('node:child_process');
const path = require('node:path');

module.exports = async function globalSetup() {
  const root = path.resolve(__dirname, '..');
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
  } catch (err) {
    // Type errors still emit JavaScript; `npm run typecheck` is the gate for them.
    if (!require('node:fs').existsSync(path.join(root, 'dist/src/main.js'))) throw err;
  }
  // Convert the GloVe vectors (and their SIF component) once, into <repo>/.cache/models,
  // before any server starts.
  const { createLocalEmbedder } = require(path.join(root, 'dist/src/adapters/embeddings/factory.js'));
  const glove = createLocalEmbedder('glove');
  await glove.warmup();
  await glove.close();
};
