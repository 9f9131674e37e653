/**
 * One HTTP request with node:http, its answer as the client receives it on the wire: the
 * status, every header in the order sent (names in lower case, Date left out: it differs
 * between any two answers) and the body's bytes undecoded. For tests comparing two answers
 * header by header.
 */
import http from "node:http";

export interface RawAnswer {
  status: number;
  /** Every header but Date, in the order sent, names in lower case. */
  headers: [string, string][];
  bytes: Buffer;
}

export function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(baseUrl + path, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const pairs: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i].toLowerCase(), res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode!, headers: pairs.filter(([name]) => name !== "date"), bytes: Buffer.concat(chunks) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The answer's header `name` (lower case), or undefined. */
export function headerOf(answer: RawAnswer, name: string): string | undefined {
  return answer.headers.find(([key]) => key === name)?.[1];
}
