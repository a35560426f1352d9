/**
 * A network namespace of a test's own (`ip netns`), for what loopback in the test's own
 * namespace cannot give: an IPv6 prefix whose every address is local (many source addresses of
 * one /64, a NAT64 address to listen on). Names start with `s22-` and the process id, so tests
 * running at once, here or in another checkout, never share one. Needs root and `ip` (iproute2);
 * without them the test fails, it does not skip.
 */
import { execFileSync, spawn } from "node:child_process";

/** A namespace made by {@link createNamespace}. */
export interface Namespace {
  name: string;
  /** Runs `command` inside the namespace and returns its stdout. */
  exec(command: string, args: string[]): string;
  /** Starts `command` inside the namespace; resolves with its stdout once it exits 0 (else rejects with its stderr). */
  run(command: string, args: string[], options?: { env?: Record<string, string>; timeoutMs?: number }): Promise<string>;
  /** Deletes the namespace. */
  remove(): void;
}

let made = 0;

/**
 * Creates a namespace with loopback up, `localPrefixes` (IPv6 CIDRs) routed as local, and
 * non-local binding allowed, so a socket may bind any address of those prefixes as its source.
 */
export function createNamespace(tag: string, localPrefixes: readonly string[] = []): Namespace {
  const name = `s22-${tag}-${process.pid}-${made++}`;
  execFileSync("ip", ["netns", "add", name]);
  const exec = (command: string, args: string[]): string =>
    execFileSync("ip", ["netns", "exec", name, command, ...args], { encoding: "utf8" });
  try {
    exec("ip", ["link", "set", "lo", "up"]);
    exec("sysctl", ["-q", "-w", "net.ipv6.ip_nonlocal_bind=1"]);
    for (const prefix of localPrefixes) exec("ip", ["-6", "route", "add", "local", prefix, "dev", "lo"]);
  } catch (error) {
    execFileSync("ip", ["netns", "del", name]);
    throw error;
  }
  return {
    name,
    exec,
    run: (command, args, options = {}) =>
      new Promise((resolve, reject) => {
        const child = spawn("ip", ["netns", "exec", name, command, ...args], {
          env: { ...process.env, ...options.env },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        let err = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
        child.once("exit", (code, signal) => {
          clearTimeout(timer);
          if (code === 0) resolve(out);
          else reject(new Error(`${command} in ${name} exited ${code ?? signal}: ${err || out}`));
        });
      }),
    remove: () => execFileSync("ip", ["netns", "del", name]),
  };
}
