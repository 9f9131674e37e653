/**
 * Password hashing as the domain needs it (SPEC §4: passwords are stored hashed, with
 * scrypt in the server: src/auth/scrypt-hasher.ts). `requester` names the client the work
 * is done for (its address), so an implementation can share its capacity fairly; work for
 * no client (the CLI) leaves it out.
 */
export interface PasswordHasher {
  /**
   * The hash to store for `password`.
   * @throws TooManyRequestsError when `requester` already has its share of hashing under way.
   */
  hash(password: string, requester?: string): Promise<string>;
  /**
   * Whether `password` is the one `stored` was made from; a malformed `stored` never matches.
   * `urgent` (credentials this server verified before) goes ahead of other waiting work.
   */
  verify(password: string, stored: string, requester?: string, urgent?: boolean): Promise<boolean>;
  /** The work of a real check, for an email with no account: the answer time tells nothing. */
  verifyAgainstDummy(password: string, requester?: string): Promise<false>;
}
