// The one way a test moves time: a clock it steps, passed as the `clock` option the plugin, the
// gateway and the stores take (Unix ms), instead of sleeping past an expiry.

export interface SteppedClock {
  /** The time the parts read: pass it as their `clock` option. */
  now: () => number
  /** Moves the clock on by `ms`. */
  step: (ms: number) => void
}

/**
 * A clock the test steps. Given `start`, it stands at `start` until stepped (the test owns every
 * instant). Without one it runs with real time plus what was stepped, for tests whose parts also
 * meet real time elsewhere (a real Redis's TTLs, MAC nonces signed against the wall clock).
 */
export function steppedClock (start?: number): SteppedClock {
  let stepped = 0
  const now = start === undefined ? () => Date.now() + stepped : () => start + stepped
  return { now, step: (ms) => { stepped += ms } }
}
