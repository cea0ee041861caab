import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { MongoReadStore } from '../../src/adapters/mongodb/mongoReadStore';
import { readStoreContract } from './readStore.contract';

const url = process.env.KB_TEST_MONGODB_URL;

if (url) {
  const dbNames: string[] = [];
  afterAll(async () => {
    const client = await new MongoClient(url).connect();
    for (const name of dbNames) await client.db(name).dropDatabase();
    await client.close();
  });
  readStoreContract('MongoReadStore', async () => {
    const dbName = `kb_test_${randomUUID().slice(0, 8)}`;
    dbNames.push(dbName);
    return new MongoReadStore({ url, dbName }).connect();
  });
} else {
  describe.skip('ReadStore contract: MongoReadStore (skipped: set KB_TEST_MONGODB_URL to a replica set, e.g. mongodb://localhost:27017/?replicaSet=rs0)', () => {
    it('needs a server', () => undefined);
  });
}
