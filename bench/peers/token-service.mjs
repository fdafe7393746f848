/**
 * The auth service behind the nginx peer: what a team would write for
 * `auth_request` — node:http, keep-alive, the private tokens in a Set in
 * memory (no Redis: the cheapest honest version). `Authorization: Token <t>`
 * known → 204 with `X-User-Id`; anything else → 401.
 * Usage: node bench/peers/token-service.mjs <tokens file: "token user-id" per line>; prints {"port"}.
 */
import http from 'node:http'
import { readFileSync } from 'node:fs'

const users = new Map(readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')))

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const h = req.headers.authorization
  const user = typeof h === 'string' && h.startsWith('Token ') ? users.get(h.slice(6)) : undefined
  if (user === undefined) res.writeHead(401, { 'content-length': 0 }).end()
  else res.writeHead(204, { 'x-user-id': user }).end()
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n')
})
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.closeAllConnections(); server.close(() => process.exit(0)) })
