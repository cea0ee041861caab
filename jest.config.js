/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // Transpile only (fast); `npm run typecheck` is the type gate.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json', diagnostics: false }],
  },
  testTimeout: 60000,
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/globalSetup.js',
};
