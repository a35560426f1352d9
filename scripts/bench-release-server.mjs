// The benchmark's mirror, in its own process so that it does not share the SDK's event loop:
// the test helper's HTTPS mirror (plain fast path: a file stream into the TLS socket).
// argv[2]: JSON { root, caPath }. Prints one JSON line { url, port } when listening; exits when stdin closes.
import { writeFileSync } from "node:fs";
import { startMirror } from "../test/release/helpers/mirror.ts";

const { root, caPath } = JSON.parse(process.argv[2]);
const mirror = await startMirror({ root });
writeFileSync(caPath, mirror.caPem);
process.stdout.write(`${JSON.stringify({ url: mirror.url, port: mirror.port })}\n`);
process.stdin.resume();
process.stdin.on("end", async () => {
  await mirror.close();
  process.exit(0);
});
