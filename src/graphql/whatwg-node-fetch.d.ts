/**
 * The types of `@whatwg-node/fetch`, graphql-yoga's fetch ponyfill, as the server's project
 * sees them (tsconfig.server.json maps the module here). The package's own declaration
 * starts with `/// <reference lib="dom" />`, which would hand every server module the
 * browser's globals (`document`, `window`) and undo the split of issue 31
 * (test/lint/type-split.test.ts found it). On Node 20 the package hands out Node's own
 * globals, so they are declared as those, which @types/node describes; the rest of its
 * surface is copied by shape from its 0.10 declaration.
 */
export declare const fetch: typeof globalThis.fetch;
export declare const Request: typeof globalThis.Request;
export declare const Response: typeof globalThis.Response & {
  json(data: unknown, init?: ResponseInit): globalThis.Response;
};
export declare const Headers: typeof globalThis.Headers;
export declare const FormData: typeof globalThis.FormData;
export declare const ReadableStream: typeof globalThis.ReadableStream;
export declare const WritableStream: typeof globalThis.WritableStream;
export declare const TransformStream: typeof globalThis.TransformStream;
export declare const CompressionStream: typeof globalThis.CompressionStream;
export declare const DecompressionStream: typeof globalThis.DecompressionStream;
export declare const TextDecoderStream: typeof globalThis.TextDecoderStream;
export declare const TextEncoderStream: typeof globalThis.TextEncoderStream;
export declare const Blob: typeof globalThis.Blob;
export declare const File: typeof globalThis.File;
export declare const crypto: typeof globalThis.crypto;
export declare const btoa: typeof globalThis.btoa;
export declare const TextDecoder: typeof globalThis.TextDecoder;
export declare const TextEncoder: typeof globalThis.TextEncoder;
export declare const URL: typeof globalThis.URL;
export declare const URLSearchParams: typeof globalThis.URLSearchParams;
/** Node 20 has no URLPattern; nothing here uses it. */
export declare const URLPattern: unknown;

export interface FormDataLimits {
  fieldNameSize?: number;
  fieldSize?: number;
  fields?: number;
  fileSize?: number;
  files?: number;
  parts?: number;
  headerSize?: number;
}

export declare const createFetch: (opts?: { useNodeFetch?: boolean; formDataLimits?: FormDataLimits; skipPonyfill?: boolean }) => {
  fetch: typeof fetch;
  Request: typeof Request;
  Response: typeof Response;
  Headers: typeof Headers;
  FormData: typeof FormData;
  ReadableStream: typeof ReadableStream;
  WritableStream: typeof WritableStream;
  TransformStream: typeof TransformStream;
  CompressionStream: typeof CompressionStream;
  DecompressionStream: typeof DecompressionStream;
  TextDecoderStream: typeof TextDecoderStream;
  TextEncoderStream: typeof TextEncoderStream;
  Blob: typeof Blob;
  File: typeof File;
  crypto: typeof crypto;
  btoa: typeof btoa;
  TextEncoder: typeof TextEncoder;
  TextDecoder: typeof TextDecoder;
  URLPattern: typeof URLPattern;
  URL: typeof URL;
  URLSearchParams: typeof URLSearchParams;
};
