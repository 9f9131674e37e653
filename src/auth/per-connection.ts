/**
 * What the last request on a connection made of its credentials, for the next request on
 * the same connection that sends the very same ones (issue 27). A client keeps its
 * connection open and sends one Authorization header or session cookie with every
 * request; turning it into the keyed hash the caches are looked up by (an HMAC) and
 * parsing the header were 14% of a cached read's own work (everything but the kernel's
 * send of the body), the largest piece after the request log (docs/performance.md,
 * session 30).
 *
 * Only the last input per connection is kept, beside the connection, for as long as it is
 * open: the same strings its request objects already held. A different input (another user
 * behind a proxy that shares its upstream connections) is computed afresh and replaces it.
 * Inputs are compared whole, field by field, never joined into one string (a separator
 * inside an email or password would make two pairs equal).
 */
export class PerConnection<Input extends readonly string[], Value> {
  private readonly last = new WeakMap<object, { input: Input; value: Value }>();

  constructor(private readonly compute: (...input: Input) => Value) {}

  /** `compute(...input)`, or what it gave for the same input on this connection last time. */
  get(connection: object | undefined, ...input: Input): Value {
    if (connection === undefined) return this.compute(...input);
    const last = this.last.get(connection);
    if (last !== undefined && last.input.length === input.length && last.input.every((part, i) => part === input[i])) return last.value;
    const value = this.compute(...input);
    this.last.set(connection, { input, value });
    return value;
  }
}
