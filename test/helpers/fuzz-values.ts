// The values the fuzz's probes draw from (test/helpers/fuzz-probes.ts, fuzz-raw.ts): origins,
// methods, paths, segments, content types, odd headers.
import { BROKEN_ESCAPES, FORM, INVALID_UTF8, REGISTERED_ORIGIN } from './fuzz-pools.ts'
import { SPA_ORIGIN } from './app.ts'

// Origins browsers may send (contract §11): the confidential clients' (the tokens'), a public
// client's (SPA_ORIGIN, the token endpoint's only CORS origin), and ones no client registered.
export const ORIGINS = [REGISTERED_ORIGIN, REGISTERED_ORIGIN, SPA_ORIGIN, SPA_ORIGIN, 'https://evil.example', 'null', 'https://app.example.com:443', 'HTTPS://APP.EXAMPLE.COM',
  `${REGISTERED_ORIGIN}/`, `${SPA_ORIGIN}.evil.example`, 'x'.repeat(300), '*', 'ü', `${SPA_ORIGIN}, ${REGISTERED_ORIGIN}`]
export const REQUEST_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS', 'get', '', 'X'.repeat(100)]
export const REQUEST_HEADERS = ['authorization', 'authorization, content-type', 'Authorization,Content-Type,X-Trace', 'x-macgate-user-id, x_macgate_scope', 'connection, upgrade, te',
  'x-http-method-override', 'x-forwarded-for, forwarded', ',,,', 'a b, c', 'X'.repeat(5000), Array.from({ length: 200 }, (_, n) => `x-${n}`).join(',')]

export const LONG = 'x'.repeat(100 * 1024)
export const LENGTHS = [1025, 2049, 4097, 8192, 30_000, 100 * 1024]
export const BAD_ESCAPES = [...INVALID_UTF8, ...BROKEN_ESCAPES, '%F0%28%8C%BC', '%C0%AF', 'a%', '%E2%82']
export const ODD_VALUES = ['', ' ', 'ü', '<script>alert(1)</script>', '../../etc/passwd', 'null', '0', '-1', '9'.repeat(30), '1e309', '[]', '{}', '\u202e', '𝕏', 'true']
export const ODD_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', '', '%zz', '%FF', 'a[b]', 'a.b', 'ü', 'token', 'clientId', '%74oken']
export const BASE_PATHS = ['/', '/oauth2', '/oauth2/', '/oauth2/authorize', '/oauth2/token', '/oauth2/signin', '/oauth2/signout', '/oauth2/revoke',
  '/oauth2/introspect', '/oauth2/rfc/token', '/.well-known/oauth-authorization-server', '/user/profile', '/user/openidV2', '/user/phoneAndEmail', '/user', '/user/',
  '/echo', '/echo/', '/echo/a/b', '/demo', '/demo/start', '/demo/callback', '/healthz', '/favicon.ico', '/unknown/x']
export const SEGMENTS = ['..', '.', '%2e%2e', '%2E', '%2F', '', 'a', '%00', '%FF', '%C3%28', 'ü', 'x'.repeat(300), '~', ';a=b', '%20', '+', '%2f..%2f', '%5C', '\\', 'oauth2', 'token', '%25', '%']
export const INJECT_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'MKCOL', 'TRACE', 'SEARCH', 'LOCK', 'COPY', 'MOVE', 'PURGE', 'REPORT', 'QUERY']
export const CONTENT_TYPES = [FORM, FORM, FORM, `${FORM}; charset=utf-8`, `${FORM}; charset=iso-8859-1`, 'APPLICATION/X-WWW-FORM-URLENCODED', `${FORM}XYZ`, `${FORM}, text/html`,
  'application/json', 'text/plain', 'multipart/form-data; boundary=zz', 'application/octet-stream', '', ';', 'text/html; charset=utf-7']
export const HOP_BY_HOP: Array<Record<string, string>> = [
  { connection: 'close' }, { connection: 'keep-alive' }, { connection: 'upgrade', upgrade: 'websocket' }, { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQCAAAAAAIAAAAA' },
  { connection: 'x-secret, te', 'x-secret': 'y', te: 'trailers' }, { connection: 'Keep-Alive, Trailer', 'keep-alive': 'timeout=5, max=1000', trailer: 'Expires' },
  { 'keep-alive': 'garbage=' }, { te: 'gzip, chunked;q=0.5' }, { te: 'trailers' }, { trailer: 'x-a, x-b' }, { upgrade: 'websocket' }, { upgrade: '\x80\xff' },
  { connection: 'authorization' }, { connection: 'host' }, { connection: ',,, ,' }, { 'proxy-connection': 'keep-alive' }, { connection: 'x-macgate-open-id, x-macgate-scope' },
  { expect: '100-continue' }, { connection: 'close, close, close' }
]
export const SPOOFS: Array<Record<string, string>> = [
  { 'x-macgate-open-id': 'evil' }, { 'x-macgate-scope': '1 2 3 4 6 1000' }, { x_macgate_user_id: 'root' }, { 'x-macgate_client-id': '1' },
  { 'X-MACGATE-USER-ID': 'root' }, { 'x-macgate-': 'x' }, { 'x-macgate-extra': 'x' }
]
export const ODD_HEADER_NAMES = ["!#$%&'*+-.^_`|~", 'x-forwarded-for', 'x-forwarded-host', 'forwarded', 'x-http-method-override', 'x-real-ip', 'a'.repeat(300), 'x--', 'X-UPPER', 'cookie', 'user-agent', 'origin', 'referer']
// Header values as they can arrive over HTTP: no CR, LF or NUL, no leading or trailing whitespace.
export const HEADER_VALUES = ['x', 'evil.example', '127.0.0.1', 'DELETE', 'for=1.2.3.4;host=evil', '\x80\xff\xc3\x28', 'a\tb', '""', 'null', 'ü', '%00', '<script>']
