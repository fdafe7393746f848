/** Property-based tests of every parser (test/fixtures/props.ts), long run. */
import t from 'tap'
import { parserProperties } from '../fixtures/props.js'

parserProperties(t, Number(process.env.SIDEGATE_PROP_RUNS ?? 20_000))
