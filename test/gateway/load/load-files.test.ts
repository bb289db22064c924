// The files `macgate load` reads (--credentials, --paths, --token-endpoint), in process: what each
// form gives, and every refusal naming the file and the line, never the line's content (a key).
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { checkPath, GRANT_PARAMETER, LoadFileError, readCredentials, readGrants, readPaths } from '../../../gateway/load/files.ts'

const directory = await mkdtemp(join(tmpdir(), 'macgate-load-files-'))
t.teardown(async () => await rm(directory, { recursive: true, force: true }))

let files = 0
/** A new file of `text`; resolves to its path. */
async function file (text: string, name = `file-${++files}.txt`): Promise<string> {
  const path = join(directory, name)
  await writeFile(path, text)
  return path
}

/** Rejects with a LoadFileError of exactly `message`, `FILE` standing for the file's path. */
async function refused (t: Test, read: (path: string) => Promise<unknown>, text: string, message: string): Promise<void> {
  const path = await file(text)
  await t.rejects(read(path), { name: 'LoadFileError', message: message.replaceAll('FILE', path) }, message)
}

const SECRET = 'k3y-never-quoted'

t.test('credentials as JSON lines: token responses as saved', async (t) => {
  const path = await file([
    '# saved token responses',
    JSON.stringify({ access_token: 'a1', mac_key: 'k1', token_type: 'mac', expires_in: 3600 }),
    '',
    `   ${JSON.stringify({ access_token: 'a2', mac_key: 'k2', mac_algorithm: 'HmacSha256' })}   `,
    ''
  ].join('\r\n'))
  t.same(await readCredentials(path), [
    { accessToken: 'a1', macKey: 'k1' },
    { accessToken: 'a2', macKey: 'k2', macAlgorithm: 'HmacSha256' }
  ], 'CRLF, comments, blank lines and padding skipped; other fields ignored; mac_algorithm kept')
  t.same(await readCredentials(await file(`\uFEFF${JSON.stringify({ access_token: 'a', mac_key: 'k' })}\n`)), [{ accessToken: 'a', macKey: 'k' }], 'a byte order mark is not content')
})

t.test('credentials as CSV, with and without the header', async (t) => {
  t.same(await readCredentials(await file('access_token,mac_key\na1,k1\na2,k2,HmacSha256\n')), [
    { accessToken: 'a1', macKey: 'k1' },
    { accessToken: 'a2', macKey: 'k2', macAlgorithm: 'HmacSha256' }
  ], 'the header is skipped; a third field is the algorithm')
  t.same(await readCredentials(await file('"access_token","mac_key","mac_algorithm"\n"a1", "k""1" ,HmacSha1\n')), [
    { accessToken: 'a1', macKey: 'k"1', macAlgorithm: 'HmacSha1' }
  ], 'a quoted header too; quoted fields unquoted ("" is one ")')
  t.same(await readCredentials(await file('a1,k1\na2,k2\n')), [
    { accessToken: 'a1', macKey: 'k1' },
    { accessToken: 'a2', macKey: 'k2' }
  ], 'without a header the first line is a token')
  t.same(await readCredentials(await file('mac_key,access_token\n')), [{ accessToken: 'mac_key', macKey: 'access_token' }],
    'only access_token,mac_key in that order is a header')
  t.same(await readCredentials(await file('"a1,"\n')), [{ accessToken: '"a1', macKey: '"' }], 'a quote that closes nothing is part of the value')
})

t.test('malformed credentials: the file, the line number, never the line', async (t) => {
  await refused(t, readCredentials, `a1,k1\n\na2,${SECRET},HmacSha1,extra\n`, 'FILE line 3: expected access_token,mac_key[,mac_algorithm] (CSV) or a JSON object, found 4 fields')
  await refused(t, readCredentials, `a1,k1\n${SECRET}\n`, 'FILE line 2: expected access_token,mac_key[,mac_algorithm] (CSV) or a JSON object, found 1 field')
  await refused(t, readCredentials, 'a1,k1\na2,,HmacSha1\n', 'FILE line 2: expected access_token,mac_key[,mac_algorithm] (CSV) or a JSON object, found 3 fields')
  await refused(t, readCredentials, '# tokens\naccess_token,mac_key\n\n', 'the credentials file FILE has a header and no tokens')
  await refused(t, readCredentials, '# only a comment\n\n  \n', 'the credentials file FILE is empty')
  await refused(t, readCredentials, '', 'the credentials file FILE is empty')

  const first = JSON.stringify({ access_token: 'a1', mac_key: 'k1' })
  await refused(t, readCredentials, `${first}\n{"access_token":"a2","mac_key":"${SECRET}"\n`, 'FILE line 2: not a JSON object')
  await refused(t, readCredentials, `${first}\n["${SECRET}"]\n`, 'FILE line 2: not a JSON object')
  await refused(t, readCredentials, `${first}\nnull\n`, 'FILE line 2: not a JSON object')
  await refused(t, readCredentials, `${first}\n"${SECRET}"\n`, 'FILE line 2: not a JSON object')
  await refused(t, readCredentials, `${first}\n{"access_token":"a2"}\n`, 'FILE line 2: mac_key is missing or not a string')
  await refused(t, readCredentials, `${first}\n{"access_token":"","mac_key":"k"}\n`, 'FILE line 2: access_token is missing or not a string')
  await refused(t, readCredentials, '{"access_token":7,"mac_key":"k"}\n', 'FILE line 1: access_token is missing or not a string')
  await refused(t, readCredentials, `${first}\n\n{"access_token":"a","mac_key":"${SECRET}","mac_algorithm":256}\n`, 'FILE line 3: mac_algorithm is missing or not a string')

  const missing = join(directory, 'no-such-file')
  await t.rejects(readCredentials(missing), { name: 'LoadFileError', message: `cannot read the credentials file ${missing}: ENOENT` })
  await t.rejects(readCredentials(directory), { name: 'LoadFileError', message: `cannot read the credentials file ${directory}: EISDIR` }, 'a directory')
  const error = await readCredentials(await file(`a,${SECRET},x,y\n`)).catch((error: unknown) => error)
  t.type(error, LoadFileError)
  t.notOk((error as Error).message.includes(SECRET), 'no content in any message')
})

t.test('paths: origin-relative, one / first, no spaces or #', async (t) => {
  t.equal(checkPath('/api/v1?x=1&y=%20'), undefined)
  t.equal(checkPath('api/v1'), 'must start with one /')
  t.equal(checkPath('//evil.example.com/'), 'must start with one /', 'a protocol-relative URL would leave the origin')
  t.equal(checkPath('https://api.example.com/'), 'must start with one /')
  t.equal(checkPath('/a b'), 'must not contain spaces or #')
  t.equal(checkPath('/a#frag'), 'must not contain spaces or #')
  t.equal(checkPath('/a\tb'), 'must not contain spaces or #')
})

t.test('a paths file: PATH [WEIGHT] a line', async (t) => {
  t.same(await readPaths(await file('# the mix\n/hot?page=1 3\n\n/cold\n  /warm\t0.5  \n')), [
    { path: '/hot?page=1', weight: 3 },
    { path: '/cold', weight: 1 },
    { path: '/warm', weight: 0.5 }
  ], 'the weight 1 if left out; any positive number')
  await refused(t, readPaths, '/ok\nrelative 2\n', 'FILE line 2: the path must start with one /')
  await refused(t, readPaths, '/ok\n\n//other.example.com/x\n', 'FILE line 3: the path must start with one /')
  await refused(t, readPaths, '/ok 0\n', 'FILE line 1: expected PATH [WEIGHT], the weight a positive number')
  await refused(t, readPaths, '/ok -1\n', 'FILE line 1: expected PATH [WEIGHT], the weight a positive number')
  await refused(t, readPaths, '/ok heavy\n', 'FILE line 1: expected PATH [WEIGHT], the weight a positive number')
  await refused(t, readPaths, '/ok Infinity\n', 'FILE line 1: expected PATH [WEIGHT], the weight a positive number')
  await refused(t, readPaths, '/a 1\n/b 2 3\n', 'FILE line 2: expected PATH [WEIGHT], the weight a positive number')
  await refused(t, readPaths, '\n# nothing\n', 'the paths file FILE is empty')
  const missing = join(directory, 'no-paths')
  await t.rejects(readPaths(missing), { name: 'LoadFileError', message: `cannot read the paths file ${missing}: ENOENT` })
})

t.test('grants: a code or refresh token a line, or a JSON object of parameters', async (t) => {
  t.same(GRANT_PARAMETER, { authorization_code: 'code', refresh_token: 'refresh_token' })
  const mixed = await file(`# codes\nc1\n${JSON.stringify({ code: 'c2', code_verifier: 'v2' })}\n\n  c3  \n`)
  t.same(await readGrants(mixed, 'authorization_code'), [{ code: 'c1' }, { code: 'c2', code_verifier: 'v2' }, { code: 'c3' }])
  t.same(await readGrants(await file('r1\n{"refresh_token":"r2","scope":"1"}\n'), 'refresh_token'), [{ refresh_token: 'r1' }, { refresh_token: 'r2', scope: '1' }])

  const code = (path: string): Promise<unknown> => readGrants(path, 'authorization_code')
  await refused(t, code, `c1\nc2 ${SECRET}\n`, 'FILE line 2: expected one code or a JSON object')
  await refused(t, (path) => readGrants(path, 'refresh_token'), 'r1\n\nr2\tr3\n', 'FILE line 3: expected one refresh_token or a JSON object')
  await refused(t, code, `{"code_verifier":"${SECRET}"}\n`, 'FILE line 1: code is missing')
  await refused(t, (path) => readGrants(path, 'refresh_token'), '{"code":"c1"}\n', 'FILE line 1: refresh_token is missing')
  await refused(t, code, 'c1\n{"code":"c2","code_verifier":""}\n', 'FILE line 2: code_verifier is missing or not a string')
  await refused(t, code, 'c1\n{"code":2}\n', 'FILE line 2: code is missing or not a string')
  await refused(t, code, `c1\n{"code":"${SECRET}",}\n`, 'FILE line 2: not a JSON object')
  await refused(t, code, '# none left\n', 'the token-endpoint file FILE is empty')
  const missing = join(directory, 'no-codes')
  await t.rejects(code(missing), { name: 'LoadFileError', message: `cannot read the token-endpoint file ${missing}: ENOENT` })
})
