// The load generator `macgate load` runs and the benchmark measures with, exported from
// gateway/server.ts as `macgate/gateway`.
export { runLoad, type LoadOptions, type LoadProgress, type LoadResult, type Sample, type SetupRequest } from './run.js'
export { roundRobin, signed, signedRequests, weighted, zipf, type Credentials, type Picker, type SignedRequestOptions } from './requests.js'
export { LatencyHistogram } from './histogram.js'
