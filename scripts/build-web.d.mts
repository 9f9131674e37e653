export function buildWeb(): Promise<void>;
