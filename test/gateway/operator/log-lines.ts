// Lines that meet every edge of the log destination's chunks: short and long, non-ASCII (two-,
// three- and four-byte UTF-8, a lone surrogate), one longer than a whole chunk (30,000 characters,
// which may take 90,000 bytes: more than 64 KiB), and enough of them that many end across a
// chunk's boundary.
export function testLines (): string[] {
  const lines: string[] = []
  for (let i = 0; i < 3000; i++) {
    const size = (i * 37) % 300
    lines.push(`{"n":${i},"text":"${'x'.repeat(size)}","é":"ü€","emoji":"\u{1F600}","lone":"\ud800"}\n`)
  }
  lines.splice(1500, 0, `{"long":"${'l'.repeat(30_000)}"}\n`)
  return lines
}

/**
 * The line in parts of about `size` characters, as a writer hands them over: never between the
 * two halves of a surrogate pair (a writer's parts are whole strings: each half alone is no
 * character, and UTF-8 would write each as U+FFFD).
 */
export function partsOf (line: string, size: number): string[] {
  const parts: string[] = []
  let at = 0
  while (at < line.length) {
    let end = Math.min(line.length, at + size)
    const last = line.charCodeAt(end - 1)
    if (end < line.length && last >= 0xd800 && last <= 0xdbff && line.charCodeAt(end) >= 0xdc00 && line.charCodeAt(end) <= 0xdfff) end++
    parts.push(line.slice(at, end))
    at = end
  }
  return parts
}
