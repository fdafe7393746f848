import { join } from 'node:path'
import { BENCH, spawnNode, runJson } from './lib.mjs'
const up = await spawnNode(join(BENCH, 'upstream.mjs'))
const bare = await spawnNode(join(BENCH, 'bare-proxy.mjs'), [`http://127.0.0.1:${up.info.port}`], { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', '/tmp/sgb/bareprof'] })
const r = await runJson(join(BENCH, 'load.mjs'), { url: `http://127.0.0.1:${bare.info.port}/api/v1/items/`, path: '/api/v1/items/', connections: 50, duration: 8, warmup: 1, kind: 'plain' })
console.log(r.rps)
bare.proc.kill('SIGINT'); await new Promise(r => setTimeout(r, 1500)); await up.stop()
