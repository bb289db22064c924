// The demo app's script, as its page loads it (an ES module, no build step): everything an app
// without a server does, with macgate/client's browser entry. Tokens live in this page's memory
// only; the pending sign-in (state, PKCE verifier) in sessionStorage, kept there by the library.
export const APP_SCRIPT = `import {
  beginAuthorization, completeAuthorization, createSignedFetch, signRequestAsync, refreshTokens, revokeToken
} from '/lib/client/browser.js'

const config = JSON.parse(document.getElementById('config').textContent)
const $ = (id) => document.getElementById(id)
const GRANT_KEY = 'macgate.demo.grant'
let session

const clientFor = (grant) => ({ server: config.gateway, clientId: config.clients[grant], redirectUri: config.redirectUri })
const describe = (error) => error.errno !== undefined ? 'error ' + error.errno + ': ' + error.description
  : error.reason !== undefined ? 'refused (' + error.reason + '): ' + error.message
  : error.status !== undefined ? 'error ' + error.error + ' (HTTP ' + error.status + ')' : error.message

function report (title, { status = '', code = '', body = '' } = {}) {
  const entry = document.createElement('div')
  entry.className = 'step call'
  Object.assign(entry.dataset, { status: String(status), code: String(code) })
  const heading = document.createElement('h3')
  heading.textContent = title + (status === '' ? '' : ' → ' + status)
  const text = document.createElement('pre')
  text.textContent = body
  entry.append(heading, text)
  $('results').prepend(entry)
}

function showSession () {
  const { grant, tokens } = session
  $('signed-out').hidden = true
  $('signed-in').hidden = false
  $('grant-used').textContent = grant === 'code' ? 'code grant with PKCE (public client)' : 'implicit grant'
  $('scope').textContent = tokens.scope
  $('open-id').textContent = tokens.openId ?? '(the implicit grant carries none)'
  $('token').textContent = tokens.access_token.slice(0, 6) + '…'
  $('refresh').disabled = tokens.refresh_token === undefined
}

// One signed call; the answer's code is read whatever the status (the gateway lets this origin read refusals).
async function call (path, authorization) {
  const url = config.gateway + path
  try {
    const answer = authorization === undefined
      ? await createSignedFetch({ accessToken: session.tokens.access_token, macKey: session.tokens.mac_key, macAlgorithm: session.tokens.mac_algorithm })(url)
      : await fetch(url, { headers: { authorization } })
    const body = await answer.text()
    let code = ''
    try { code = JSON.parse(body).code } catch {}
    report('GET ' + path, { status: answer.status, code, body })
  } catch (error) {
    report('GET ' + path, { status: 'blocked', body: 'The browser did not let this page read the answer: ' + error.message })
  }
}

async function callApi () {
  for (const path of ['/user/profile', '/user/phoneAndEmail']) await call(path)
}

$('signin').addEventListener('click', async () => {
  const grant = document.querySelector('input[name=grant]:checked').value
  sessionStorage.setItem(GRANT_KEY, grant)
  location.assign(await beginAuthorization({ ...clientFor(grant), responseType: grant, scope: config.scope }))
})
$('call').addEventListener('click', callApi)
$('replay').addEventListener('click', async () => {
  // The same signed request twice: the second spends a nonce already spent.
  const authorization = await signRequestAsync({ method: 'GET', url: config.gateway + '/user/profile', accessToken: session.tokens.access_token, macKey: session.tokens.mac_key, macAlgorithm: session.tokens.mac_algorithm })
  await call('/user/profile', authorization)
  await call('/user/profile', authorization)
})
$('refresh').addEventListener('click', async () => {
  try {
    session.tokens = await refreshTokens({ ...clientFor('code'), refreshToken: session.tokens.refresh_token })
    showSession()
    report('refreshed: a new access token and refresh token', { status: 'ok' })
    await call('/user/profile')
  } catch (error) {
    report('refresh', { status: 'failed', code: error.errno ?? '', body: describe(error) })
  }
})
$('revoke').addEventListener('click', async () => {
  try {
    await revokeToken({ server: config.gateway, clientId: config.clients[session.grant], token: session.tokens.access_token })
    report('revoked: the grant is gone', { status: 'ok' })
  } catch (error) {
    report('revoke', { status: 'failed', body: describe(error) })
  }
  await call('/user/profile')
})
$('signout').addEventListener('click', () => { session = undefined; location.replace(location.pathname) })

const landed = new URL(location.href)
if (landed.searchParams.has('state') || landed.hash.includes('state=')) {
  const grant = sessionStorage.getItem(GRANT_KEY) ?? 'code'
  try {
    session = { grant, tokens: await completeAuthorization() }
  } catch (error) {
    report('sign-in', { status: 'failed', code: error.errno ?? '', body: describe(error) })
  }
  // The code or the tokens leave the address bar and the history.
  history.replaceState(null, '', location.pathname)
  if (session !== undefined) {
    showSession()
    await callApi()
  }
}
document.body.dataset.ready = 'true'
`
