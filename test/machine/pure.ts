/**
 * The setup file of `npm run test:quick` (vitest.quick.config.ts): a pure test opens no socket
 * and starts no process. Each is refused here with an error naming it, so a file on the quick
 * list that needs a socket or a process fails there instead of slowing the loop down, and is
 * taken off the list.
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

function refuse(what: string): never {
  throw new Error(
    `${what}: test:quick runs pure tests only (no socket, no process); take this file off its list in vitest.quick.config.ts`,
  );
}

for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const) {
  (childProcess as unknown as Record<string, unknown>)[name] = () => refuse(`child_process.${name}`);
}
net.Socket.prototype.connect = function connect() {
  return refuse("a socket's connect");
} as never;
net.Server.prototype.listen = function listen() {
  return refuse("a server's listen");
} as never;
// ES module imports of node:child_process see the refusals too.
syncBuiltinESMExports();
