// Passkeys in the browser (WebAuthn, navigator.credentials): register one on
// the account page (#passkey-register), sign in with one alone on the login
// page (#passkey-signin), or give one as the second step after the password
// (#passkey-second). Each asks the gateway for the ceremony's options (and its
// sealed state), lets the browser and the authenticator answer, and posts the
// answer back as JSON; the gateway checks everything (src/auth/passkeys.ts).
// The options and answers are WebAuthn's JSON forms (base64url for bytes).
'use strict'
;(function () {
  const $ = function (id) { return document.getElementById(id) }
  const statusEl = $('passkey-status')

  function say (text, bad) {
    if (!statusEl) return
    statusEl.textContent = text
    statusEl.className = bad ? 'error' : 'muted'
    statusEl.setAttribute('role', bad ? 'alert' : 'status')
  }

  function toBytes (s) {
    const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4)
    const bin = atob(b64)
    const out = new Uint8Array(bin.length)
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
    return out.buffer
  }
  function toB64url (buf) {
    const bytes = new Uint8Array(buf)
    let bin = ''
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i])
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  }

  function creationOptions (o) {
    const pk = Object.assign(
      {}, o, { challenge: toBytes(o.challenge), user: Object.assign({}, o.user, { id: toBytes(o.user.id) }) }
    )
    pk.excludeCredentials = (o.excludeCredentials || []).map(function (c) {
      return Object.assign({}, c, { id: toBytes(c.id) })
    })
    return { publicKey: pk }
  }
  function requestOptions (o) {
    const pk = Object.assign({}, o, { challenge: toBytes(o.challenge) })
    if (o.allowCredentials) {
      pk.allowCredentials = o.allowCredentials.map(function (c) {
        return Object.assign({}, c, { id: toBytes(c.id) })
      })
    }
    return { publicKey: pk }
  }
  function credentialJson (cred) {
    const r = cred.response
    const out = {
      id: cred.id,
      rawId: toB64url(cred.rawId),
      type: cred.type,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      response: { clientDataJSON: toB64url(r.clientDataJSON) }
    }
    if (r.attestationObject) {
      out.response.attestationObject = toB64url(r.attestationObject)
      out.response.transports = r.getTransports ? r.getTransports() : []
    } else {
      out.response.authenticatorData = toB64url(r.authenticatorData)
      out.response.signature = toB64url(r.signature)
      if (r.userHandle) out.response.userHandle = toB64url(r.userHandle)
    }
    return out
  }

  function post (url, data, csrf) {
    const headers = { Accept: 'application/json', 'Content-Type': 'application/json' }
    if (csrf) headers['X-CSRFToken'] = csrf
    return fetch(url, { method: 'POST', credentials: 'same-origin', headers, body: JSON.stringify(data || {}) }).then(function (res) {
      return res.json().catch(function () { return {} }).then(function (json) {
        if (!res.ok) throw new Error((json && (json.detail || json.msg)) || ('Request failed (' + res.status + ').'))
        return json
      })
    })
  }

  function why (err) {
    // the person cancelled, or the browser timed out: not the gateway's refusal
    if (err && err.name === 'NotAllowedError') return 'The passkey was not used (cancelled or timed out). Try again.'
    if (err && err.name === 'InvalidStateError') return 'This authenticator already holds a passkey for this account.'
    return (err && err.message) || 'Something went wrong.'
  }

  if (!window.PublicKeyCredential) {
    ['passkey-register', 'passkey-signin', 'passkey-second'].forEach(function (id) { const el = $(id); if (el) el.hidden = true })
    say('This browser cannot use passkeys.', false)
    return
  }

  const register = $('passkey-register')
  if (register) {
    register.addEventListener('submit', function (ev) {
      ev.preventDefault()
      const csrf = register.elements.csrfmiddlewaretoken.value
      const name = register.elements.name.value
      const password = register.elements.password.value
      say('Follow your browser\'s prompt…', false)
      post(register.getAttribute('data-options-url'), password ? { password } : {}, csrf).then(function (o) {
        return navigator.credentials.create(creationOptions(o.options)).then(function (cred) {
          return post(register.getAttribute('action'), { state: o.state, name, response: credentialJson(cred) }, csrf)
        })
      }).then(function () {
        // the page says so, and shows the passkey and the new state
        window.location.assign(window.location.pathname + '?added=1')
      }).catch(function (err) { say(why(err), true) })
    })
  }

  function signIn (button) {
    button.addEventListener('click', function () {
      const next = button.getAttribute('data-next') || ''
      say('Follow your browser\'s prompt…', false)
      post(button.getAttribute('data-options-url'), {}).then(function (o) {
        return navigator.credentials.get(requestOptions(o.options)).then(function (cred) {
          return post(button.getAttribute('data-url'), { state: o.state, next, response: credentialJson(cred) })
        })
      }).then(function (r) {
        window.location.assign(r.next || '/')
      }).catch(function (err) { say(why(err), true) })
    })
  }
  ;['passkey-signin', 'passkey-second'].forEach(function (id) { const b = $(id); if (b) signIn(b) })
})()
