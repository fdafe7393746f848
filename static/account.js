// The API keys page: lists, creates (with a name, an expiry and an IP
// allow-list, as `sidegate key create` takes them), disables and deletes the
// user's access keys, and shows, creates, resets and revokes the private token, through
// sidegate's JSON endpoints with the session cookie and the CSRF token.
// Creating a key or a token needs the password once the sign-in is older than
// data-fresh-ms allows: the page then shows a password field and sends it.
'use strict'
;(function () {
  const body = document.body
  const keysUrl = body.getAttribute('data-keys-url')
  const tokenUrl = body.getAttribute('data-token-url')
  const csrfCookie = body.getAttribute('data-csrf-cookie')
  const $ = function (id) { return document.getElementById(id) }
  const statusEl = $('status')

  function cookie (name) {
    const parts = document.cookie ? document.cookie.split('; ') : []
    for (let i = 0; i < parts.length; i++) {
      const eq = parts[i].indexOf('=')
      if (parts[i].slice(0, eq) === name) return decodeURIComponent(parts[i].slice(eq + 1))
    }
    return ''
  }

  function say (text, bad) {
    statusEl.textContent = text
    statusEl.className = bad ? 'status bad' : 'status'
  }

  function api (method, url, data) {
    const opts = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } }
    if (method !== 'GET') opts.headers['X-CSRFToken'] = cookie(csrfCookie)
    if (data !== undefined) {
      opts.headers['Content-Type'] = 'application/json'
      opts.body = JSON.stringify(data)
    }
    return fetch(url, opts).then(function (res) {
      if (res.status === 401) {
        // the session ended: sign in again and come back
        window.location.assign('/login?next=' + encodeURIComponent(window.location.pathname))
        throw new Error('Your session has ended.')
      }
      if (res.status === 204) return null
      return res.json().catch(function () { return {} }).then(function (json) {
        if (!res.ok) {
          const err = new Error((json && json.detail) || ('Request failed (' + res.status + ').'))
          err.code = json && json.code
          throw err
        }
        return json
      })
    })
  }

  function fmt (iso) {
    if (!iso) return 'never'
    const d = new Date(iso)
    return isNaN(d.getTime()) ? iso : d.toLocaleString()
  }

  function el (tag, attrs, children) {
    const e = document.createElement(tag)
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k]
      else e.setAttribute(k, attrs[k])
    })
    ;(children || []).forEach(function (c) { e.appendChild(c) })
    return e
  }

  function busy (button, p) {
    button.disabled = true
    return p.then(function (v) { button.disabled = false; return v }, function (err) {
      button.disabled = false; say(err.message, true); throw err
    })
  }

  // ---- confirming with the password (a sign-in older than the server allows)

  const confirmBox = $('confirm')
  const passwordField = $('confirm-password')

  function askPassword () { confirmBox.hidden = false }
  // the sign-in becomes too old while the page is open: ask from then on
  setTimeout(askPassword, Math.max(0, Number(body.getAttribute('data-fresh-ms')) || 0))

  // the body to send with a create: the password when the page asks for it
  function confirmation () {
    if (confirmBox.hidden) return Promise.resolve(undefined)
    if (passwordField.value === '') {
      passwordField.focus()
      return Promise.reject(new Error('Enter your password to continue.'))
    }
    return Promise.resolve({ password: passwordField.value })
  }

  function confirmed (result) {
    // the password is not kept in the page longer than one action
    passwordField.value = ''
    passwordField.removeAttribute('aria-invalid')
    return result
  }

  function notConfirmed (err) {
    if (err && err.code === 'password_required') {
      askPassword()
      passwordField.focus()
      err.message = 'Enter your password to continue.'
    } else if (err && err.code === 'password_incorrect') {
      passwordField.value = ''
      passwordField.setAttribute('aria-invalid', 'true')
      passwordField.focus()
    }
    throw err
  }

  // `extra`: more fields of the body (a new key's options)
  function createWithConfirmation (url, extra) {
    return confirmation().then(function (data) {
      let body = data
      if (extra) {
        body = {}
        Object.keys(extra).forEach(function (k) { body[k] = extra[k] })
        if (data) body.password = data.password
      }
      return api('POST', url, body)
    }).then(confirmed, notConfirmed)
  }

  // ---- access keys

  function renderKeys (keys) {
    const tbody = $('ak-table').querySelector('tbody')
    tbody.textContent = ''
    $('ak-table').hidden = keys.length === 0
    $('ak-empty').hidden = keys.length !== 0
    keys.forEach(function (k) {
      const toggle = el('button', { type: 'button', class: 'small', 'data-action': 'toggle', 'aria-label': (k.is_active ? 'Disable' : 'Enable') + ' key ' + k.id, text: k.is_active ? 'Disable' : 'Enable' })
      const del = el('button', { type: 'button', class: 'small danger', 'data-action': 'delete', 'aria-label': 'Delete key ' + k.id, text: 'Delete' })
      toggle.addEventListener('click', function () {
        busy(toggle, api('PATCH', keysUrl + k.id + '/', { is_active: !k.is_active })).then(function () {
          say('Access key ' + (k.is_active ? 'disabled' : 'enabled') + '.')
          return loadKeys()
        }).catch(function () {})
      })
      del.addEventListener('click', function () {
        if (!window.confirm('Delete access key ' + k.id + '? Requests signed with it will be refused.')) return
        busy(del, api('DELETE', keysUrl + k.id + '/')).then(function () {
          say('Access key deleted.')
          return loadKeys()
        }).catch(function () {})
      })
      const expired = k.date_expired && new Date(k.date_expired).getTime() <= Date.now()
      const state = !k.is_active ? 'Disabled' : expired ? 'Expired' : 'Active'
      const row = el('tr', { 'data-key-id': k.id }, [
        el('td', { class: 'key-name', text: k.name || '' }),
        el('td', {}, [el('code', { text: k.id })]),
        el('td', {}, [el('time', { datetime: k.date_created, text: fmt(k.date_created) })]),
        el('td', {}, [k.date_last_used ? el('time', { datetime: k.date_last_used, text: fmt(k.date_last_used) }) : document.createTextNode('never')]),
        el('td', { class: 'key-expires' }, [k.date_expired ? el('time', { datetime: k.date_expired, text: fmt(k.date_expired) }) : document.createTextNode('never')]),
        el('td', { class: 'key-allow-ips' }, k.allow_ips && k.allow_ips.length ? k.allow_ips.map(function (a) { return el('code', { class: 'ip', text: a }) }) : [document.createTextNode('anywhere')]),
        el('td', {}, [el('span', { class: 'badge ' + (state === 'Active' ? 'on' : 'off'), text: state })]),
        el('td', { class: 'actions-cell' }, [toggle, del])
      ])
      tbody.appendChild(row)
    })
  }

  function loadKeys () {
    return api('GET', keysUrl).then(renderKeys).catch(function (err) { say(err.message, true) })
  }

  // the new key's options: sent as typed; the server parses them as the command line does
  const optionFields = { name: $('ak-name'), expires: $('ak-expires'), allow_ips: $('ak-allow-ips') }

  function keyOptions () {
    const out = {}
    Object.keys(optionFields).forEach(function (k) {
      const f = optionFields[k]
      f.removeAttribute('aria-invalid')
      const v = f.value.trim()
      if (v !== '') out[k] = v
    })
    return out
  }

  // a 400 names the field first ("expires: …"): mark that one
  function optionRefused (err) {
    const m = err && err.code === 'bad_request' && /^(\w+):/.exec(err.message)
    const f = m && optionFields[m[1]]
    if (f) {
      f.setAttribute('aria-invalid', 'true')
      f.focus()
    }
    throw err
  }

  $('ak-create').addEventListener('click', function () {
    busy($('ak-create'), createWithConfirmation(keysUrl, keyOptions()).catch(optionRefused)).then(function (k) {
      Object.keys(optionFields).forEach(function (n) { optionFields[n].value = '' })
      $('ak-new-id').textContent = k.id
      $('ak-new-secret').textContent = k.secret
      $('ak-new').hidden = false
      say('Access key created. Copy the secret now.')
      $('ak-new-secret').focus()
      return loadKeys()
    }).catch(function () {})
  })

  $('ak-new-done').addEventListener('click', function () {
    // the secret leaves the page for good
    $('ak-new-id').textContent = ''
    $('ak-new-secret').textContent = ''
    $('ak-new').hidden = true
  })
  $('ak-new-secret').setAttribute('tabindex', '-1')

  // ---- private token

  let token = null
  let shown = false

  function renderToken () {
    const has = token !== null
    $('pt-none').hidden = has
    $('pt-box').hidden = !has
    $('pt-delete').hidden = !has
    $('pt-copy').hidden = !has || !shown
    $('pt-create').textContent = has ? 'Reset token' : 'Create token'
    $('pt-value').textContent = has && shown ? token : '\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022'
    $('pt-show').textContent = shown ? 'Hide' : 'Show'
  }

  function loadToken () {
    return api('GET', tokenUrl).then(function (r) { token = r.token; renderToken() }).catch(function (err) { say(err.message, true) })
  }

  $('pt-show').addEventListener('click', function () { shown = !shown; renderToken() })

  $('pt-create').addEventListener('click', function () {
    const reset = token !== null
    if (reset && !window.confirm('Reset the private token? The current one stops working.')) return
    busy($('pt-create'), createWithConfirmation(tokenUrl)).then(function (r) {
      token = r.token
      shown = true
      renderToken()
      say(reset ? 'Private token reset: the old one no longer works.' : 'Private token created.')
    }).catch(function () {})
  })

  $('pt-delete').addEventListener('click', function () {
    if (!window.confirm('Revoke the private token? Requests using it will be refused.')) return
    busy($('pt-delete'), api('DELETE', tokenUrl)).then(function () {
      token = null
      shown = false
      renderToken()
      say('Private token revoked.')
    }).catch(function () {})
  })

  loadKeys()
  loadToken()
})()
