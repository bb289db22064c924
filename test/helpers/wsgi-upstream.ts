// A WSGI upstream (Python's wsgiref) in a child process: it answers the CGI environ's `HTTP_*`
// keys, with REQUEST_METHOD and QUERY_STRING, as JSON, which is how a WSGI or CGI app reads
// headers (`_` and `-` alike, duplicates joined with `,`).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import type { Test } from 'tap'

const SCRIPT = `
import json
from wsgiref.simple_server import make_server, WSGIRequestHandler

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

def app(environ, start_response):
    seen = {k: v for k, v in environ.items() if k.startswith('HTTP_') or k in ('REQUEST_METHOD', 'QUERY_STRING')}
    body = json.dumps(seen).encode('utf-8')
    start_response('200 OK', [('Content-Type', 'application/json'), ('Content-Length', str(len(body)))])
    return [body]

server = make_server('127.0.0.1', 0, app, handler_class=Quiet)
print(server.server_port, flush=True)
server.serve_forever()
`

/** Starts the WSGI upstream on a free loopback port; killed at teardown. Resolves to its origin. */
export async function wsgiUpstream (t: Test): Promise<string> {
  const child = spawn('python3', ['-c', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null) child.kill()
  })
  let errors = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { errors += chunk })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`the WSGI upstream did not start within 5 s: ${errors}`)), 5000)
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const line = /^(\d+)\n/.exec(out)
      if (line !== null) {
        clearTimeout(timer)
        resolve(Number(line[1]))
      }
    })
    void once(child, 'exit').then(() => {
      clearTimeout(timer)
      reject(new Error(`the WSGI upstream exited before listening: ${errors}`))
    })
  })
  return `http://127.0.0.1:${port}`
}
