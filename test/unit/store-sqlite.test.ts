/**
 * SqliteStore: the Store contract (test/fixtures/store-contract.ts, the suite
 * RedisStore and MemoryStore pass) on the embedded backend, on a clock the
 * tests step.
 */
import t from 'tap'
import { sqliteStores, storeContract } from '../fixtures/store-contract.js'

t.test('the Store contract', async (t) => { storeContract(t, sqliteStores()) })
