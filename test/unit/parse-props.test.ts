/**
 * Property-based tests of every parser (test/fixtures/props.ts), short run; `npm run test:hard` runs many more cases.
 */
import t from 'tap'
import { parserProperties } from '../fixtures/props.js'

parserProperties(t, 300)
