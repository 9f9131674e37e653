export declare const BINARY: string;
export declare function packageBinary(): Promise<{ binary: string; bytes: number; scriptBytes: number }>;
