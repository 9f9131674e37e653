export function buildWeb(options?: { outDir?: string; minify?: boolean }): Promise<{ outDir: string; files: string[] }>;
