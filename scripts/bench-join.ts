// npm run bench:join — the time of a full code check and of a full registration (connect +
// PAKE + call) against the reference server on loopback, beside the bare OPAQUE computation of
// the same exchange in one process. Prints medians and the ratios (goal: at most 1.3).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { X509Certificate } from "node:crypto";
import { startReferenceServer } from "../examples/reference-server/server.js";
import { createAdminClient, parseJoinUrl } from "../src/index.js";
import { checkJoinCode, createMachineIdentity, createThrowawayIdentity, registerMachine } from "../src/node/index.js";
import { createJoinCodeRecord, createServerSetup, finishServerLogin, startServerLogin } from "../src/server/opaque.js";
import { finishLogin, startLogin } from "../src/node/opaque.js";

const runs = Number(process.env.BENCH_RUNS ?? 11);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dataDir = mkdtempSync(join(tmpdir(), "stratum-bench-join-"));
const server = await startReferenceServer({
  dataDir,
  adminAddr: "127.0.0.1:0",
  joinAddr: "127.0.0.1:0",
  log: () => {},
  limits: { perAddressCalls: 1_000_000, perAddressRegistrations: 1_000_000, maxWaiting: 1_000_000 },
});
try {
  const admin = createAdminClient({ baseUrl: server.adminUrl, token: server.adminToken });
  const { url } = await admin.mintJoinCode({ endpoint: server.joinEndpoint });
  const code = parseJoinUrl(url).code.code;
  const caDer = new Uint8Array(new X509Certificate(server.caPem).raw);

  // The bare OPAQUE computation of one exchange, both sides, in this process.
  const serverSetup = await createServerSetup();
  const record = await createJoinCodeRecord({ serverSetup, codeId: "jc-bench", code, caDer });
  const bareOnce = async () => {
    const login = await startLogin(code);
    const answer = await startServerLogin({
      serverSetup,
      codeId: "jc-bench",
      registrationRecord: record,
      ke1: login.ke1,
      caDer,
    });
    const finished = await finishLogin({ state: login.state, ke2: answer.ke2, code, caDer });
    const key = await finishServerLogin({ state: answer.state, ke3: finished!.ke3, caDer });
    if (!key) throw new Error("bare OPAQUE failed");
  };
  const throwaway = await createThrowawayIdentity();
  const identities = await Promise.all(Array.from({ length: runs + 1 }, () => createMachineIdentity()));
  let next = 0;
  const checkOnce = () => checkJoinCode({ url, release: "0.6.0", identity: throwaway });
  const registerOnce = () => registerMachine({ url, identity: identities[next++]!, release: "0.6.0" });

  // Interleaved, so that a load from elsewhere on a shared machine hits all three alike.
  const bare: number[] = [];
  const check: number[] = [];
  const register: number[] = [];
  await bareOnce();
  await checkOnce();
  await registerOnce();
  const timed = async (fn: () => Promise<unknown>, into: number[]) => {
    const start = performance.now();
    await fn();
    into.push(performance.now() - start);
  };
  for (let i = 0; i < runs; i++) {
    await timed(bareOnce, bare);
    await timed(checkOnce, check);
    await timed(registerOnce, register);
  }

  const b = median(bare);
  const rows = [
    ["bare OPAQUE (KE1, KE2, KE3, both sides, one process)", b],
    ["full code check (TLS 1.3 connect + PAKE + POST /v1/join/code-checks)", median(check)],
    ["full registration (TLS 1.3 connect + PAKE + POST /v1/join/registrations)", median(register)],
  ] as const;
  console.log(`bench:join — medians of ${runs} runs after one warm-up, Node ${process.version}`);
  for (const [what, ms] of rows)
    console.log(`  ${what.padEnd(78)} ${ms.toFixed(1).padStart(8)} ms   ratio ${(ms / b).toFixed(2)}`);
  const worst = Math.max(median(check), median(register)) / b;
  console.log(`  goal: ratio <= 1.30 -> ${worst <= 1.3 ? "met" : "NOT met"} (worst ${worst.toFixed(2)})`);
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
