export interface DemoClient { clientId: string, clientSecret: string, redirectUri: string }
export async function registerDemo (..._args: unknown[]): Promise<void> {}
