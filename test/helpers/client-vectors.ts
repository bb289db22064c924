// The signed requests both entries of macgate/client must reproduce (test/fixtures/client-vectors.json),
// for the Node tests and the Chromium ones alike.
import { readFileSync } from 'node:fs'

export interface RequestVector {
  source: string
  method: string
  url: string
  access_token: string
  mac_key: string
  mac_algorithm?: string
  nonce: string
  string: string
  mac: string
  header: string
}

export const REQUEST_VECTORS = (JSON.parse(readFileSync(new URL('../fixtures/client-vectors.json', import.meta.url), 'utf8')) as { requests: RequestVector[] }).requests
