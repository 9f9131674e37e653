/**
 * Reads a password: hidden when standard input is a terminal, else one line of input (so
 * scripts can pipe it).
 */
import { createInterface } from "node:readline";

export async function readPassword(question: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    const rl = createInterface({ input });
    for await (const line of rl) {
      rl.close();
      return line;
    }
    return "";
  }
  process.stderr.write(question);
  input.setRawMode(true);
  input.resume();
  let typed = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") {
          finish();
          process.stderr.write("\n");
          return resolve(typed);
        }
        if (ch === "\u0003") {
          finish();
          return reject(new Error("Cancelled."));
        }
        if (ch === "\u007f") typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    const finish = () => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
    };
    input.on("data", onData);
  });
}
