// Starts Swagger UI on sidegate's own OpenAPI document (the page names it in
// data-spec-url). No online validator, no external requests. When "Try it out"
// runs an unsafe method with the browser's session (no Authorization set in
// Authorize), the CSRF token from the <abbrev>_csrftoken cookie goes along in
// X-CSRFToken, as sidegate's own pages do.
'use strict'
window.addEventListener('DOMContentLoaded', function () {
  const root = document.getElementById('swagger-ui')
  const csrfCookie = root.getAttribute('data-csrf-cookie')
  const SAFE = { GET: 1, HEAD: 1, OPTIONS: 1, TRACE: 1 }

  function cookie (name) {
    const parts = document.cookie ? document.cookie.split('; ') : []
    for (let i = 0; i < parts.length; i++) {
      const eq = parts[i].indexOf('=')
      if (parts[i].slice(0, eq) === name) return decodeURIComponent(parts[i].slice(eq + 1))
    }
    return ''
  }

  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute('data-spec-url'),
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    persistAuthorization: false,
    requestInterceptor: function (req) {
      const method = String(req.method || 'GET').toUpperCase()
      const token = csrfCookie ? cookie(csrfCookie) : ''
      if (!SAFE[method] && token && !req.headers.Authorization && !req.headers['X-CSRFToken']) req.headers['X-CSRFToken'] = token
      return req
    }
  })
})
