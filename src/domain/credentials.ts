// What the domain tells a cache of verified credentials (src/auth/credential-cache.ts) when it revokes some: the
// change must hold on this node before the caller is answered.
export interface CredentialRevocations {
  /** An API key was deleted or rotated: it and the session tokens it minted stop working. */
  forgetApiKey(id: string): void;
  /** A workspace's ip_allowlist changed: its credentials are checked afresh. */
  forgetWorkspace(orgId: string): void;
}
