// Every default of the plugin, in one place: the option validation fills these in, and the
// gateway's config file takes the same names and values (contract §3, §4, §6).

/** Seconds in ten years: the refresh token's default lifetime. */
export const TEN_YEARS = 10 * 365 * 24 * 3600

/** The longest a code may live, in seconds (RFC 6749 §4.1.2 recommends at most 10 minutes). */
export const MAX_CODE_TTL = 600

/** The most extra host names a signature may bind (contract §6): each costs a refused request one more HMAC. */
export const MAX_SIGNED_HOSTS = 5

export const defaults = {
  /** Seconds. */
  codeTtl: 300,
  /** Seconds; also the mac_key's lifetime (90 days). */
  accessTokenTtl: 7_776_000,
  refreshTokenTtl: TEN_YEARS,
  /** Sign-in attempts per client address and minute. */
  signInRateLimit: 10,
  /** Failed client authentications at the token endpoint per minute (an address may host many clients). */
  clientAuthRateLimit: { perClient: 10, perAddress: 50 },
  /** Seconds a device authorization (RFC 8628) waits for the user. */
  deviceCodeTtl: 600,
  /** Seconds a device waits between polls, at first (RFC 8628 §3.5's default). */
  devicePollInterval: 5,
  /** Device authorizations started per minute, per client and per address. */
  deviceAuthorizationRateLimit: { perClient: 600, perAddress: 30 },
  /** Wrong user codes entered per minute: per browser session, per address, and across the deployment (README, "Devices"). */
  userCodeGuessLimit: { perSession: 5, perAddress: 20, perDeployment: 100 },
  strictRedirectUri: false,
  secureCookies: false,
  /** How far a nonce's minute may lie from ours, either way. */
  nonceSkewMinutes: 5,
  /** Accept the other SDKs' query forms too (contract §6). */
  macQueryVariants: true,
  /** Answer browsers' CORS on the open API and, for public clients, the token endpoint (contract §11). */
  cors: true,
  /** Which clients registered an origin, as the CORS checks read it (Redis only; the embedded store is asked each time). */
  originCache: {
    max: 10_000,
    /** ms (the `corsOriginCacheMs` setting): an origin registered or removed on another instance counts here within this time. */
    ttlMs: 10_000
  },
  /** Seconds a browser may keep a preflight's answer (browsers cap it: Chromium at 7200). */
  corsMaxAge: 600,
  /** Dynamic client registration (RFC 7591): off unless the deployment opens it. */
  registration: 'off',
  /** Registrations per client address (an IPv6 one by its /64) and minute, when registration is open. */
  registrationRateLimit: 10,
  /** The developer console (`/oauth2/developer`): off unless the deployment opens it. */
  developerConsole: 'off',
  /** Apps one user may own through the developer console. */
  developerAppLimit: 20,
  /** What a registration may ask for by default: the code grant (and its refreshes). */
  registrationGrantTypes: ['authorization_code', 'refresh_token'],
  tokenCache: {
    /** Most tokens held; 0 turns the cache off. */
    max: 100_000,
    /** Longest a live token is held without a store read, ms; revocations arrive sooner. */
    maxAgeMs: 300_000,
    /** How long an unknown, expired or revoked token is remembered as such, ms. */
    negativeTtlMs: 10_000
  }
} as const
