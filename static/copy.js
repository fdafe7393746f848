// Copy buttons: <button data-copy="ID"> copies the text of the element with that id, and says so
// in the page's #status live region. No inline script: the page's CSP allows only files.
(function () {
  'use strict'
  function say (text, bad) {
    const s = document.getElementById('status')
    if (!s) return
    s.textContent = text
    s.className = bad ? 'status bad' : 'status'
  }
  function copyText (text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text)
    return new Promise(function (resolve, reject) {
      const ta = document.createElement('textarea')
      ta.setAttribute('readonly', '')
      ta.className = 'sr-only'
      ta.value = text
      document.body.appendChild(ta)
      ta.select()
      let ok = false
      try { ok = document.execCommand('copy') } catch (e) {}
      document.body.removeChild(ta)
      if (ok) resolve()
      else reject(new Error('Copy failed: select the text and copy it.'))
    })
  }
  document.addEventListener('click', function (ev) {
    const b = ev.target.closest ? ev.target.closest('button[data-copy]') : null
    if (!b) return
    const from = document.getElementById(b.getAttribute('data-copy'))
    if (!from) return
    copyText(from.textContent).then(function () {
      const old = b.textContent
      b.textContent = 'Copied'
      say('Copied to the clipboard.')
      setTimeout(function () { b.textContent = old }, 1500)
    }, function (err) { say(err.message, true) })
  })
})()
