/**
 * Encrypts secrets before they are stored. `context` (the owning user id) is bound into the
 * ciphertext, so a sealed value copied into another user's record does not open.
 * Adapters: `LocalSealer` (AES-256-GCM, key file), `KmsSealer` (AWS KMS).
 */
export interface Sealer {
  seal(plaintext: string, context: string): Promise<string>;
  /** Throws if the ciphertext was altered or sealed for another context. */
  open(sealed: string, context: string): Promise<string>;
}
