// The store's types in one place: its records (`records.ts`) and its roles (`roles.ts`). Both
// stores implement every role: the embedded one in `memory/`, the Redis one in `redis/`.
export type * from './records.ts'
export type * from './roles.ts'
export type { NonceUse } from './nonce-key.ts'
