/** RFC 4515 escaping of the values sign_in.ldap puts into search filters (src/auth/ldap/filter.ts). */
import t from 'tap'
import { escapeFilterValue, fillFilter } from '../../src/auth/ldap/filter.js'

t.test('the five characters RFC 4515 names are escaped; nothing else changes', async (t) => {
  t.equal(escapeFilterValue('a*b(c)d\\e\u0000f'), 'a\\2ab\\28c\\29d\\5ce\\00f')
  t.equal(escapeFilterValue('józef.o\'brien+x@corp'), 'józef.o\'brien+x@corp', 'letters of any script, punctuation that is not special')
  t.equal(escapeFilterValue('\\2a'), '\\5c2a', 'an escape sent as text stays text')
})

t.test('fillFilter: {username} and {dn} filled, escaped; a value cannot add a clause', async (t) => {
  t.equal(fillFilter('(&(objectClass=person)(uid={username}))', { username: 'admin)(|(uid=*' }), '(&(objectClass=person)(uid=admin\\29\\28|\\28uid=\\2a))')
  t.equal(fillFilter('(member={dn})', { dn: 'cn=a(b),dc=x' }), '(member=cn=a\\28b\\29,dc=x)')
  t.equal(fillFilter('(uid={username})(x={other})', { username: 'u' }), '(uid=u)(x={other})', 'only the two names')
})
