/**
 * The baseline: a bare node:http pipe proxy, no authentication, one keep-alive
 * agent to the upstream. What a plain Node forwarder reaches on this machine.
 * Usage: node bench/bare-proxy.mjs <upstream url>; prints {"port"}.
 */
import http from 'node:http'

const target = new URL(process.argv[2])
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })

const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
  const up = http.request({
    host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent
  }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers)
    ur.pipe(res)
  })
  up.on('error', () => {
    if (res.headersSent) res.destroy()
    else res.writeHead(502, { 'content-type': 'application/json' }).end('{"detail":"bad gateway"}')
  })
  req.pipe(up)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n')
})
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.closeAllConnections(); server.close(() => process.exit(0)) })
