import { readFileSync } from 'node:fs'
import t from 'tap'
import { MAX_HEADER_LENGTH, parseMacHeader } from '../../../plugin/mac/header.ts'

interface Vectors {
  headers: {
    valid: Array<{ header: string, access_token: string, nonce: string, mac: string, sent_by: string }>
    invalid: Array<{ header: string, why: string }>
  }
}
const vectors = JSON.parse(readFileSync(new URL('../../fixtures/mac.json', import.meta.url), 'utf8')) as Vectors

// Asserts the contract's failure: 96002 with HTTP 401, and a reason matching `reason`.
function rejects (t: Pick<typeof import('tap').t, 'throws'>, header: string, reason: RegExp, why = header): void {
  t.throws(() => parseMacHeader(header), { errno: 96002, statusCode: 401, code: 'OA_INVALID_REQUEST', message: reason }, why)
}

t.test('every valid spelling from the vectors', async (t) => {
  t.equal(vectors.headers.valid.length, 5)
  for (const v of vectors.headers.valid) {
    const [, minutes] = v.nonce.split(':')
    t.same(parseMacHeader(v.header), {
      accessToken: v.access_token,
      nonce: v.nonce,
      mac: v.mac,
      minutes: Number(minutes)
    }, v.sent_by)
  }
})

t.test('every invalid header from the vectors', async (t) => {
  t.equal(vectors.headers.invalid.length, 8)
  const reasons: Record<string, RegExp> = {
    'mac missing': /missing mac$/,
    'nonce repeated': /nonce given more than once/,
    'not the MAC scheme': /scheme is not MAC/,
    'unquoted value': /access_token value must be in double quotes/,
    'nonce without colon': /nonce must be R:M/,
    'minutes not an integer': /nonce minutes must be a non-negative integer/,
    'empty access_token': /access_token is empty/,
    'bad percent-encoding': /bad percent-encoding in access_token/
  }
  for (const v of vectors.headers.invalid) {
    const reason = reasons[v.why]
    if (reason === undefined) throw new Error(`no expectation for vector "${v.why}"`)
    rejects(t, v.header, reason, v.why)
  }
})

t.test('more valid spellings', async (t) => {
  const expect = (header: string, accessToken: string, nonce: string, mac: string): void => {
    const parsed = parseMacHeader(header)
    t.same([parsed.accessToken, parsed.nonce, parsed.mac], [accessToken, nonce, mac], header)
  }
  expect('MaC\taccess_token = "a" ,\tnonce= "1:2",mac ="m"', 'a', '1:2', 'm')
  expect('  MAC access_token="a", nonce="1:2", mac="m" ,  ', 'a', '1:2', 'm')
  // `+` stays `+`; `%20` is decoded; a UTF-8 escape decodes to one character.
  expect('MAC access_token="a+b%20c%E4%B8%AD", nonce="x:0", mac="m"', 'a+b c中', 'x:0', 'm')
  // A `,` or `=` inside quotes is part of the value.
  expect('MAC access_token="a,b=c", nonce="1:2", mac="m"', 'a,b=c', '1:2', 'm')
})

t.test('nonce parts', async (t) => {
  const parse = (nonce: string) => parseMacHeader(`MAC access_token="a", nonce="${nonce}", mac="m"`)
  t.same([parse('-42:29000000').nonce, parse('-42:29000000').minutes], ['-42:29000000', 29000000], 'a signed integer R, as the SDKs send it')
  t.equal(parse('r:007').minutes, 7, 'leading zeros are still digits')
  t.equal(parse(`${'9'.repeat(64)}:1`).nonce, `${'9'.repeat(64)}:1`, '64-character R')
  t.equal(parse('1:999999999999').minutes, 999999999999, '12-digit M')
  const bad = /nonce must be R:M/
  rejects(t, 'MAC access_token="a", nonce="", mac="m"', bad)
  rejects(t, 'MAC access_token="a", nonce=":5", mac="m"', bad, 'empty R')
  rejects(t, `MAC access_token="a", nonce="${'9'.repeat(65)}:1", mac="m"`, bad, '65-character R')
  rejects(t, 'MAC access_token="a", nonce="1 2:5", mac="m"', bad, 'space in R')
  rejects(t, 'MAC access_token="a", nonce="1%0A2:5", mac="m"', bad, 'newline in R after decoding')
  const minutes = /nonce minutes/
  rejects(t, 'MAC access_token="a", nonce="1:2:3", mac="m"', minutes, 'second colon')
  rejects(t, 'MAC access_token="a", nonce="1:", mac="m"', minutes, 'empty M')
  rejects(t, 'MAC access_token="a", nonce="1:-5", mac="m"', minutes, 'negative M')
  rejects(t, 'MAC access_token="a", nonce="1:1.5", mac="m"', minutes, 'fractional M')
  rejects(t, 'MAC access_token="a", nonce="1:1000000000000", mac="m"', minutes, '13-digit M')
})

t.test('syntax errors', async (t) => {
  rejects(t, 'MAC', /scheme is not MAC/, 'scheme alone')
  rejects(t, 'MACaccess_token="a"', /scheme is not MAC/, 'no space after scheme')
  rejects(t, 'MAX access_token="a", nonce="1:2", mac="m"', /scheme is not MAC/)
  rejects(t, '', /scheme is not MAC/, 'empty header')
  rejects(t, 'MAC ', /missing access_token, nonce, mac/, 'no parameters')
  rejects(t, 'MAC , access_token="a", nonce="1:2", mac="m"', /unexpected character at position 4/, 'leading comma')
  rejects(t, 'MAC access_token="a",, nonce="1:2", mac="m"', /unexpected character at position 21/, 'double comma')
  rejects(t, 'MAC access_token="a" nonce="1:2", mac="m"', /expected , after access_token/, 'missing comma')
  rejects(t, 'MAC access_token "a", nonce="1:2", mac="m"', /expected = after access_token/)
  rejects(t, 'MAC access_token=', /access_token value must be in double quotes/)
  rejects(t, 'MAC access_token="a, nonce="1:2", mac="m', /expected , after access_token/, 'quote closes early')
  rejects(t, 'MAC access_token="abc', /access_token value has no closing quote/)
  rejects(t, 'MAC mac="%E4%B8", access_token="a", nonce="1:2"', /bad percent-encoding in mac/, 'truncated UTF-8')
  rejects(t, 'MAC access_token="a", nonce="1:2", mac=""', /mac is empty/)
  rejects(t, 'MAC access_token="a", mac="m"', /missing nonce$/)
})

t.test('unknown parameters are refused', async (t) => {
  rejects(t, 'MAC access_token="a", nonce="1:2", mac="m", ext="x"', /unknown parameter ext$/)
  rejects(t, 'MAC access_token="a", ts="1", nonce="1:2", mac="m"', /unknown parameter ts$/)
  rejects(t, 'MAC Access_Token="a", nonce="1:2", mac="m"', /unknown parameter Access_Token/, 'names are case-sensitive')
  rejects(t, `MAC ${'x'.repeat(100)}="a"`, new RegExp(`unknown parameter ${'x'.repeat(32)}$`), 'echoed name is capped')
  rejects(t, 'MAC __proto__="a", nonce="1:2", mac="m"', /unknown parameter __proto__/)
})

t.test('length limit', async (t) => {
  const base = 'MAC access_token="", nonce="1:2", mac="m"'
  const fill = (total: number): string => base.replace('""', `"${'a'.repeat(total - base.length)}"`)
  t.equal(fill(MAX_HEADER_LENGTH).length, 4096)
  t.equal(parseMacHeader(fill(MAX_HEADER_LENGTH)).accessToken.length, 4096 - base.length, 'exactly 4096 is accepted')
  rejects(t, fill(MAX_HEADER_LENGTH + 1), /longer than 4096 characters/, '4097 characters')
})

t.test('adversarial input stays fast', async (t) => {
  const started = performance.now()
  for (const header of [
    `MAC ${' '.repeat(4000)}`,
    `MAC access_token="${'%'.repeat(4000)}"`,
    `MAC nonce="${':'.repeat(4000)}", access_token="a", mac="m"`,
    `MAC ${'a'.repeat(4000)}`
  ]) {
    t.throws(() => parseMacHeader(header), { code: 'OA_INVALID_REQUEST', errno: 96002 })
  }
  t.ok(performance.now() - started < 100, 'pathological headers are rejected quickly')
})

t.test('percent-decoding: what decodeURIComponent gives, and a 96002 wherever it throws', async (t) => {
  // Drawn from escapes of ASCII, of UTF-8 lead and continuation bytes, broken ones and plain text.
  const pieces = ['%3A', '%3a', '%2B', '%2F', '%3D', '%25', '%7F', '%00', '%41', '%E4%B8%AD', '%C3%A9', '%F0%9F%98%80', '%E4%B8', '%80', '%C3', '%FF', '%', '%4', '%G1', '%4G', '%%', 'a', 'Z9', '+', '/', '-', '中', '\u00e9', ':', '=']
  let seed = 1
  const next = (below: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    return seed % below
  }
  let checked = 0
  let refused = 0
  for (let i = 0; i < 5000; i++) {
    let raw = ''
    for (let n = next(6); n >= 0; n--) raw += pieces[next(pieces.length)]!
    let expected: string | undefined
    try {
      expected = decodeURIComponent(raw)
    } catch {}
    const header = `MAC access_token="${raw}", nonce="1:2", mac="${raw}"`
    let got: string
    try {
      const parsed = parseMacHeader(header)
      got = parsed.accessToken === parsed.mac ? parsed.accessToken : 'the two differ'
    } catch (error) {
      const { errno, message } = error as { errno?: number, message?: string }
      got = errno === 96002 && message?.includes('bad percent-encoding in access_token') === true ? 'refused' : `another error: ${message}`
    }
    if (expected === undefined) refused++
    if (got !== (expected ?? 'refused')) t.fail(`${JSON.stringify(raw)}: ${got}, not ${expected ?? 'refused'}`)
    checked++
  }
  t.ok(refused > 500 && checked - refused > 500, `${checked} values, ${refused} of them refused`)
})
