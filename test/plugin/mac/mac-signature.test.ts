import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  canonicalQuery,
  computeMac,
  makeNonce,
  unixMinute,
  signingHost,
  signingKeyOf,
  stringToSign
} from '../../../plugin/mac/signature.ts'
import { constantTimeEqual } from '../../../plugin/access/constant-time.ts'

interface Vectors {
  signing: Array<{ source: string, mac_key: string, nonce: string, method: string, host: string, path: string, query: string, string: string, mac: string }>
  query: Array<{ raw: string, primary: string, form_encoded_variant: string, without_empty_variant: string }>
}
const vectors = JSON.parse(readFileSync(new URL('../../fixtures/mac.json', import.meta.url), 'utf8')) as Vectors

t.test('signing vectors: exact string and mac', async (t) => {
  t.equal(vectors.signing.length, 3)
  for (const v of vectors.signing) {
    const text = stringToSign(v)
    t.equal(text, v.string, `${v.source}: string`)
    t.equal(computeMac(v.mac_key, text), v.mac, `${v.source}: mac`)
    t.ok(constantTimeEqual(v.mac, computeMac(v.mac_key, text)), `${v.source}: constantTimeEqual`)
    t.equal(signingKeyOf(v.mac_key).digest(text, 'base64'), v.mac, `${v.source}: mac with the key prepared once, as the verifier signs`)
    // The vectors' queries are already canonical: signing them again changes nothing.
    t.equal(canonicalQuery(v.query), v.query, `${v.source}: query is canonical`)
  }
  // The published mac belongs to the misspelt host only.
  const [misspelt, correct] = vectors.signing
  t.not(misspelt?.mac, correct?.mac)
})

t.test('query vectors: all three variants', async (t) => {
  t.equal(vectors.query.length, 3)
  for (const v of vectors.query) {
    t.equal(canonicalQuery(v.raw), v.primary, `primary of "${v.raw}"`)
    t.equal(canonicalQuery(v.raw, 'primary'), v.primary, `explicit primary of "${v.raw}"`)
    t.equal(canonicalQuery(v.raw, 'form-encoded'), v.form_encoded_variant, `form-encoded of "${v.raw}"`)
    t.equal(canonicalQuery(v.raw, 'without-empty'), v.without_empty_variant, `without-empty of "${v.raw}"`)
  }
})

t.test('canonical query details', async (t) => {
  // Code-unit order: upper case before lower case, no locale collation.
  t.equal(canonicalQuery('b=1&B=2&a=3'), 'B=2&a=3&b=1')
  t.equal(canonicalQuery('k=b&k=a&k=B'), 'k=B&k=a&k=b', 'same name: by value')
  t.equal(canonicalQuery('flag&x=1'), 'flag=&x=1', 'a name without = has an empty value')
  t.equal(canonicalQuery('flag&x=1', 'without-empty'), 'x=1')
  t.equal(canonicalQuery('&&a=1&&'), 'a=1', 'empty pieces are skipped')
  t.equal(canonicalQuery('a=b=c'), 'a=b=c', 'value keeps later =')
  t.equal(canonicalQuery('?a=1'), '?a=1', 'a query that starts with ? keeps it in the name')
  t.equal(canonicalQuery('%3Fa=1', 'form-encoded'), '%3Fa=1')
  t.equal(canonicalQuery('a=%ZZ'), 'a=%ZZ', 'bad escapes are kept as text')
  // Java's URLEncoder keeps *-._ and encodes ~ ! ' ( ) as escapes; so does URLSearchParams.
  t.equal(canonicalQuery("s=*-._~!'()%20%26%3D", 'form-encoded'), 's=*-._%7E%21%27%28%29+%26%3D')
  t.equal(canonicalQuery('e=%F0%9F%98%80', 'form-encoded'), 'e=%F0%9F%98%80', 'astral character')
  t.equal(canonicalQuery('e=%F0%9F%98%80'), 'e=\u{1F600}')
  t.equal(canonicalQuery('a=&b=', 'without-empty'), '')
})

t.test('string to sign: method and host normalisation', async (t) => {
  const text = (method: string, host: string): string =>
    stringToSign({ nonce: '1:2', method, host, path: '/p', query: 'a=1' })
  t.equal(text('get', 'API.Example.COM:8443'), '1:2\nGET\napi.example.com\n/p\na=1\n')
  t.equal(text('Post', '[::1]:8080'), '1:2\nPOST\n[::1]\n/p\na=1\n', 'IPv6 literal with port')
  t.equal(signingHost('[::1]:8080'), '[::1]')
  t.equal(signingHost('[2001:DB8::1]'), '[2001:db8::1]', 'IPv6 literal without port')
  t.equal(signingHost('[::1'), '[::1', 'unterminated bracket is left alone')
  t.equal(signingHost('2001:db8::1'), '2001:db8::1', 'bare IPv6 has no port to remove')
  t.equal(signingHost('127.0.0.1:80'), '127.0.0.1')
  t.equal(signingHost('Example.com'), 'example.com')
  t.equal(signingHost('example.com:'), 'example.com', 'empty port')
  // Case is converted only when some character needs it; beyond ASCII, by the language's own rules.
  t.equal(text('GET', 'api.example.com'), '1:2\nGET\napi.example.com\n/p\na=1\n', 'already in case')
  t.equal(text('geT', 'api.example.coM'), '1:2\nGET\napi.example.com\n/p\na=1\n', 'one letter out of case, last')
  t.equal(text('GETß', 'BÜCHER.example'), '1:2\nGETSS\nbücher.example\n/p\na=1\n', 'non-ASCII: toUpperCase/toLowerCase')
  t.equal(signingHost('ÉXAMPLE.com:80'), 'éxample.com')
})

t.test('computeMac is HMAC-SHA1 over UTF-8', async (t) => {
  const expected = createHmac('sha1', Buffer.from('kéy', 'utf8')).update(Buffer.from('中\n', 'utf8')).digest('base64')
  t.equal(computeMac('kéy', '中\n'), expected)
  t.equal(signingKeyOf('kéy').digest('中\n', 'base64'), expected, 'a prepared key is the same UTF-8 bytes')
  t.equal(computeMac('key', 'The quick brown fox jumps over the lazy dog'), '3nybhbi3iqa8ino29wqQcBydtNk=', 'RFC-known HMAC-SHA1 value')
})

t.test('nonces', async (t) => {
  t.equal(unixMinute(0), 0)
  t.equal(unixMinute(59_999), 0)
  t.equal(unixMinute(60_000), 1)
  t.equal(unixMinute(1_396_941_600_000), 23_282_360, 'the documentation example minute')
  const before = Math.floor(Date.now() / 60000)
  const now = unixMinute()
  t.ok(now >= before && now <= before + 1, 'defaults to the clock')

  t.match(makeNonce(1_396_941_600_000), /^-?[0-9]{1,19}:23282360$/)
  const seen = new Set<string>()
  const outOfRange: string[] = []
  let negative = 0
  for (let i = 0; i < 200; i++) {
    const nonce = makeNonce()
    const [random = '', minutes] = nonce.split(':')
    const value = BigInt(random)
    if (value < -(2n ** 63n) || value >= 2n ** 63n || Math.abs(Number(minutes) - before) > 1) outOfRange.push(nonce)
    if (value < 0n) negative++
    seen.add(nonce)
  }
  t.same(outOfRange, [], 'signed 64-bit random part, current minute')
  t.equal(seen.size, 200, 'random parts do not repeat')
  t.ok(negative > 20 && negative < 180, 'both signs occur')
})
