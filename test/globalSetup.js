// Compile the project once before the tests: HTTP tests start the real server
// (node dist/src/main.js) and worker threads load compiled files from dist/.
// The web console (web/) is built into dist/web when its sources changed since the last build.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

function newestMtime(dir) {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

module.exports = async function globalSetup() {
  const root = path.resolve(__dirname, '..');
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
  } catch (err) {
    // Type errors still emit JavaScript; `npm run typecheck` is the gate for them.
    if (!fs.existsSync(path.join(root, 'dist/src/main.js'))) throw err;
  }
  const web = path.join(root, 'web');
  const builtIndex = path.join(root, 'dist/web/index.html');
  if (!fs.existsSync(builtIndex) || fs.statSync(builtIndex).mtimeMs < newestMtime(web)) {
    execFileSync(process.execPath, [path.join(root, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'web/vite.config.mjs'], { cwd: root, stdio: 'pipe' });
  }
  // Convert the GloVe vectors (and their SIF component) once, into <repo>/.cache/models,
  // before any server starts.
  const { createLocalEmbedder } = require(path.join(root, 'dist/src/adapters/embeddings/factory.js'));
  const glove = createLocalEmbedder('glove');
  await glove.warmup();
  await glove.close();
};
