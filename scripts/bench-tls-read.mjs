#!/usr/bin/env node
// A bare Node TLS read of one URL, the bytes thrown away: what receiving over Node's TLS costs on
// its own, with the SDK's cipher order and its way of reading (`onread` into one 4 MiB buffer),
// and nothing verified, hashed or written. `npm run bench:release` runs it beside
// `curl -o /dev/null`: the least any Node client of that mirror spends.
//
// Usage: node scripts/bench-tls-read.mjs https://127.0.0.1:PORT/path CA.pem
// Prints { bytes } (the response, head included) once the server closes the connection.
import { readFileSync } from "node:fs";
import tls from "node:tls";

const [url, caPath] = process.argv.slice(2);
if (!url || !caPath) {
  process.stderr.write("usage: bench-tls-read.mjs URL CA.pem\n");
  process.exit(2);
}
const target = new URL(url);
// the SDK's order (src/transport/connect.ts): AES-128-GCM first
const ciphers = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"].join(":");
let bytes = 0;
const socket = tls.connect(
  {
    host: target.hostname,
    port: Number(target.port || 443),
    ca: readFileSync(caPath),
    ciphers,
    ALPNProtocols: ["http/1.1"],
    onread: { buffer: Buffer.allocUnsafe(4 * 1024 * 1024), callback: (n) => void (bytes += n) },
  },
  () => socket.write(`GET ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: close\r\n\r\n`),
);
socket.on("error", (error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
socket.on("close", () => process.stdout.write(`${JSON.stringify({ bytes })}\n`));
