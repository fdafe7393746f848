/**
 * The service behind the proxies: node:http, keep-alive, answers every request
 * with the same ~200 bytes of JSON. Prints {"port"} once listening.
 */
import http from 'node:http'

const body = Buffer.from(JSON.stringify({
  id: '3f0d5c1e-8a7b-4c2d-9e6f-1a2b3c4d5e6f',
  name: 'bench-item',
  status: 'ok',
  tags: ['alpha', 'beta', 'gamma'],
  count: 42,
  updated: '2026-11-23T10:00:00.000Z',
  note: 'a small JSON answer, like a typical API read'
}))

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.resume()
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
  res.end(body)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port, bytes: body.length }) + '\n')
})
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.closeAllConnections(); server.close(() => process.exit(0)) })
