/**
 * The auth service behind the nginx peer: what a team would write for
 * `auth_request` — node:http, keep-alive, the private tokens in a Set in
 * memory (no Redis: the cheapest honest version). `Authorization: Token <t>`
 * known → 204 with `X-User-Id`; anything else → 401.
 * `--same-answer`: 200 with the head sidegate's decision answers with (no-store,
 * a random X-Request-Id, user id, username, org, auth method, Cookie): what
 * node:http alone costs to write that answer (bench/decision-floor.mjs).
 * Usage: node bench/peers/token-service.mjs <tokens file: "token user-id" per line> [--same-answer]; prints {"port"}.
 */
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'

const sameAnswer = process.argv.includes('--same-answer')
const ORG = '00000000-0000-0000-0000-000000000002'

const users = new Map(readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')))

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const h = req.headers.authorization
  const user = typeof h === 'string' && h.startsWith('Token ') ? users.get(h.slice(6)) : undefined
  if (user === undefined) res.writeHead(401, { 'content-length': 0 }).end()
  else if (!sameAnswer) res.writeHead(204, { 'x-user-id': user }).end()
  else {
    res.writeHead(200, ['cache-control', 'no-store', 'content-length', '0', 'x-request-id', randomUUID(), 'x-svc-user-id', user,
      'x-svc-username', 'bench-user', 'x-svc-org', ORG, 'x-svc-auth-method', 'private_token', 'cookie', ''])
    res.end()
  }
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n')
})
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.closeAllConnections(); server.close(() => process.exit(0)) })
