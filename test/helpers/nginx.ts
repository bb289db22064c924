// Debian's nginx in front of a gateway, as the README's snippet has it: a real reverse proxy on a
// loopback port of its own, in a prefix directory of the test's own, stopped at teardown.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort } from './redis.ts'

/** The README's `location` block, word for word (test/gateway/edge/trusted-proxies.test.ts keeps them equal). */
export const NGINX_LOCATION = `    location / {
        proxy_pass http://macgate;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }`

async function accepts (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}

/** nginx on 127.0.0.1:PORT proxying to `upstreamPort`, connecting from `bindAddress` (127.0.0.1 by default). */
export async function startNginx (t: Test, upstreamPort: number, { bindAddress = '127.0.0.1' } = {}): Promise<{ port: number }> {
  const prefix = await mkdtemp(join(tmpdir(), 'macgate-nginx-'))
  const port = await freePort()
  const config = `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path ${prefix}/body;
    proxy_temp_path ${prefix}/proxy;
    fastcgi_temp_path ${prefix}/fastcgi;
    uwsgi_temp_path ${prefix}/uwsgi;
    scgi_temp_path ${prefix}/scgi;
    upstream macgate {
        server 127.0.0.1:${upstreamPort};
        keepalive 16;
    }
    server {
        listen 127.0.0.1:${port};
        proxy_bind ${bindAddress};
${NGINX_LOCATION}
    }
}
`
  await writeFile(join(prefix, 'nginx.conf'), config)
  const child = spawn(existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let errors = ''
  child.stderr!.on('data', (chunk) => { errors += String(chunk) })
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGQUIT')
      await once(child, 'exit')
    }
    await rm(prefix, { recursive: true, force: true })
  })
  const deadline = Date.now() + 10_000
  while (!await accepts(port)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start: ${errors}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { port }
}
