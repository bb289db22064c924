import { Redis, type RedisOptions } from 'ioredis'

/** Where a subscriber may connect: one server, or any node of a cluster. */
export type Candidates = () => RedisOptions[]

/**
 * The revocation channel, heard by one subscriber connection of this store's own.
 *
 * Revocations are published with a plain PUBLISH by the Lua scripts that revoke, so the
 * announcement is part of the revoking write. A single Redis delivers it to its subscribers; a
 * Redis Cluster forwards every plain PUBLISH over its bus to every node, so a subscriber on any
 * node, master or replica, hears it. (Sharded pub/sub cannot serve here: a script may only publish
 * to a shard channel in the slot of its own keys, and a grant's slot is not one a gateway could
 * subscribe to in advance.)
 *
 * The connection never retries in place: when it ends, the next candidate is tried (another node
 * of a cluster, which may be the one a failover promoted), a little later each time. Messages
 * published while no subscription stood are lost, so once a new subscription has taken effect the
 * listeners are told to drop everything (`null`).
 */
export class RevocationFeed {
  #connection: Redis | undefined
  #closed = false
  #next = 0
  #failures = 0

  readonly #channel: string
  readonly #candidates: Candidates
  readonly #deliver: (hashes: string[] | null) => void

  constructor (channel: string, candidates: Candidates, deliver: (hashes: string[] | null) => void) {
    this.#channel = channel
    this.#candidates = candidates
    this.#deliver = deliver
  }

  /** The first subscription: rejects when no candidate can be reached. */
  async start (): Promise<void> {
    const connection = this.#open()
    await connection.connect()
    await connection.subscribe(this.#channel)
    connection.once('end', () => this.#resubscribe())
  }

  close (): void {
    this.#closed = true
    this.#connection?.disconnect()
  }

  #open (): Redis {
    const candidates = this.#candidates()
    const options = candidates[this.#next++ % candidates.length]!
    const connection = new Redis({ ...options, lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: true, maxRetriesPerRequest: null })
    connection.on('error', () => {})
    connection.on('message', (_channel: string, message: string) => this.#deliver(message.split(' ')))
    this.#connection = connection
    return connection
  }

  #resubscribe (): void {
    if (this.#closed) return
    const delay = Math.min(50 * 2 ** this.#failures++, 1000)
    setTimeout(() => {
      if (this.#closed) return
      const connection = this.#open()
      connection.once('end', () => this.#resubscribe())
      connection.connect()
        .then(async () => await connection.subscribe(this.#channel))
        .then(() => {
          this.#failures = 0
          this.#deliver(null)
        }, () => connection.disconnect())
    }, delay).unref()
  }
}
