/** No user enumeration by timing, long run: 300 tries of each kind per endpoint. */
import t from 'tap'
import { checkEnumeration, enumeration } from '../fixtures/enumeration.js'

checkEnumeration(t, await enumeration(t, 300))
