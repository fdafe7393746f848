// Loaded into a process under callgrind by bench/callgrind.mjs (node --expose-gc --require):
// SIGUSR2 runs a full garbage collection and says so on stderr, so the counters are zeroed
// with the warm-up's garbage gone and no major GC due in the counted window.
'use strict'
process.on('SIGUSR2', () => {
  globalThis.gc()
  process.stderr.write('callgrind-gc: done\n')
})
