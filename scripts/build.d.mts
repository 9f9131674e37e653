export const DIST: string;
export const SERVER_ENTRY: string;
export const CLI_ENTRY: string;
export function buildServer(): Promise<{ files: string[] }>;
export function buildCli(): Promise<{ files: string[] }>;
export function build(): Promise<{ files: string[] }>;
