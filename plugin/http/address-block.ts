import { isIPv4, isIPv6 } from 'node:net'

/**
 * The block a caller is counted by for per-address limits: an IPv4 address itself, an IPv6 one by
 * its /64 (one subscriber's LAN, RFC 6177: any address in it is theirs to use, so counting single
 * addresses would let one caller take 2^64 of them). An IPv4-mapped IPv6 address is the IPv4 one.
 */
export function addressBlock (ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped !== null) return mapped[1]!
  if (isIPv4(ip) || !isIPv6(ip)) return ip
  const [head = '', tail = ''] = ip.toLowerCase().split('%')[0]!.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = ip.includes('::') ? (tail === '' ? [] : tail.split(':')) : []
  // An embedded IPv4 tail (::1.2.3.4) is two groups, past the /64 anyway.
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  return `${groups.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`
}
