/** The path of a request target as sent, without its query (which never goes into logs or routing). */
export function pathOf (url: string): string {
  const end = url.indexOf('?')
  return end === -1 ? url : url.slice(0, end)
}
