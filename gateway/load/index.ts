// The load generator `macgate load` runs and the benchmark measures with, exported from
// gateway/index.ts as `macgate/gateway`.
export { runLoad, type LoadOptions, type LoadProgress, type LoadResult, type Sample, type SetupRequest } from './run.ts'
export { roundRobin, signed, signedRequests, weighted, zipf, type Credentials, type Picker, type SignedRequestOptions } from './requests.ts'
export { LatencyHistogram } from './histogram.ts'
