// HTTP/1.1 chunked transfer coding, read back by the tests that talk raw sockets.

/**
 * The body of a chunked message `text` (the bytes after the head, Latin-1), and whether its last
 * chunk and the empty line after it arrived. A size line that is not hex ends the reading.
 */
export function dechunk (text: string): { body: string, complete: boolean } {
  let body = ''
  let rest = text
  for (;;) {
    const lineEnd = rest.indexOf('\r\n')
    if (lineEnd === -1) return { body, complete: false }
    const size = parseInt(rest.slice(0, lineEnd), 16)
    if (Number.isNaN(size)) return { body, complete: false }
    if (size === 0) return { body, complete: rest.slice(lineEnd + 2).includes('\r\n') }
    if (rest.length < lineEnd + 2 + size + 2) return { body, complete: false }
    body += rest.slice(lineEnd + 2, lineEnd + 2 + size)
    rest = rest.slice(lineEnd + 2 + size + 2)
  }
}
