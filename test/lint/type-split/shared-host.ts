// The kernel (src/shared): ES2022 and what src/shared/host.d.ts declares of both hosts.
export const bytes: Uint8Array = crypto.getRandomValues(new Uint8Array(4));
