// interop_js.mjs — nats.js (@nats-io/transport-node + @nats-io/jetstream) against a 3-process
// jetraft-server cluster: ORDERS R3 through the JetStream manager, 10,000 publishes with msgIDs
// and acks, the stream leader killed with SIGKILL mid-publish (every publish that failed is
// published again with its msgID until acknowledged), the leader restarted, then every
// acknowledged message read back by sequence exactly once at its acknowledged sequence, through
// the leader and on each server's own replica (direct gets over a connection to that server), and
// the API calls nats.js makes (account info, names, list, find, info, purge, delete), and the
// consumers (add, get, fetch, consume, ack, ackAck, nak, term, working, next, info, list,
// delete, an ordered consumer). The servers link with keys made by the server's key tool and
// require a user and password (a wrong password is refused with an authorization error). A
// timer bounds the run and kills every server on expiry.
//
// Usage: node interop_js.mjs PATH/TO/jetraft-server
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, openSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";

const bin = process.argv[2];
const N = 10000, KILL_AT = 4000, NAMES = ["n1", "n2", "n3"];
const base = mkdtempSync(join(tmpdir(), "jetraft-js-"));
const procs = {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function fail(msg) {
  console.error(`FAIL: ${msg} (server logs in ${base})`);
  for (const p of Object.values(procs)) p.kill("SIGKILL");
  process.exit(1);
}
setTimeout(() => fail("the test ran out of time"), 200000).unref();

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
function tool(...args) {
  const r = spawnSync(bin, args, { cwd: base, input: args[0] === "--hash-password" ? "js-secret\n" : undefined });
  if (r.status !== 0) fail(`${args.join(" ")}: ${r.stderr}`);
  return r.stdout.toString().trim();
}
tool("--keygen", "authority", "auth");
for (const n of NAMES) {
  tool("--keygen", "identity", n);
  tool("--sign", "--authority", "auth.key", "--identity", `${n}.pub`, "--cluster", "C1", "--name", n, "--out", `${n}.cert`);
}
const users = [{ user: "app", password: tool("--hash-password") }];
const cport = {}, rport = {};
for (const n of NAMES) { cport[n] = await freePort(); rport[n] = await freePort(); }
function start(n) {
  const cfg = join(base, `${n}.json`);
  const peers = Object.fromEntries(NAMES.map((m) => [m, `127.0.0.1:${rport[m]}`]));
  writeFileSync(cfg, JSON.stringify({
    name: n, cluster: "C1", listen: `127.0.0.1:${cport[n]}`,
    cluster_listen: `127.0.0.1:${rport[n]}`, peers, wal_dir: join(base, n, "wal"),
    authority: "auth.pub", identity: `${n}.key`, certificate: `${n}.cert`, users,
  }));
  const log = openSync(join(base, `${n}.log`), "a");
  procs[n] = spawn(bin, ["-c", cfg], { stdio: ["ignore", log, log] });
}
NAMES.forEach(start);

const nc = await connect({
  user: "app", pass: "js-secret",
  servers: NAMES.map((n) => `127.0.0.1:${cport[n]}`), maxReconnectAttempts: -1,
  reconnectTimeWait: 100, timeout: 5000, noRandomize: true, waitOnFirstConnect: true,
});
for (let i = 0; ; i++) {
  let bad;
  try {
    bad = await connect({ servers: `127.0.0.1:${cport.n1}`, user: "app", pass: "wrong", timeout: 5000, maxReconnectAttempts: 0 });
  } catch (e) {
    if (/authorization/i.test(`${e.message} ${e.code}`)) break;
    if (i > 40) fail(`wrong password: ${e.message}`);
    await sleep(250);
    continue;
  }
  await bad.close();
  fail("a wrong password was accepted");
}
const jsm = await jetstreamManager(nc);
const js = jetstream(nc, { timeout: 5000 });
let si;
for (let i = 0; ; i++) {
  try { si = await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], num_replicas: 3, allow_direct: true }); break; }
  catch (e) { if (i > 120) fail(`stream add: ${e.message}`); await sleep(250); }
}
const leader = si.cluster?.leader;
if (!NAMES.includes(leader)) fail(`no leader in the created stream's info`);
console.log(`ORDERS R3 created, leader ${leader}`);

const acked = new Map(); // id -> seq
async function publishUntilAcked(id) {
  for (let attempt = 0; ; attempt++) {
    try {
      const pa = await js.publish(`orders.${id % 7}`, `order ${id}`, { msgID: `m-${id}` });
      if (acked.has(id) && acked.get(id) !== pa.seq) fail(`msg ${id} acked at ${acked.get(id)} and ${pa.seq}`);
      acked.set(id, pa.seq);
      return;
    } catch (e) {
      if (attempt > 200) fail(`msg ${id}: ${e.message}`);
      await sleep(100);
    }
  }
}
// A window of 100 publishes in flight.
let next = 1;
const t0 = Date.now();
async function worker() {
  while (next <= N) {
    const id = next++;
    if (id === KILL_AT) {
      console.log(`published ${id}; SIGKILL to the stream leader ${leader}`);
      procs[leader].kill("SIGKILL");
    }
    await publishUntilAcked(id);
  }
}
await Promise.all(Array.from({ length: 100 }, worker));
console.log(`all ${N} acknowledged in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
start(leader);

// Wait for every replica to be current again, then read every sequence back.
for (let i = 0; ; i++) {
  const info = await jsm.streams.info("ORDERS").catch(() => null);
  const reps = info?.cluster?.replicas ?? [];
  if (info?.cluster?.leader && reps.length === 2 && reps.every((r) => r.current)) break;
  if (i > 240) fail("the replicas did not become current");
  await sleep(250);
}
const info = await jsm.streams.info("ORDERS");
// Reads seqs 1..last with get(seq) (null: no message there), 100 in flight, each retried on an
// error; every acknowledged message must be there exactly once, at its acknowledged seq.
async function readAll(who, get, last) {
  const seen = new Map();
  let next = 1;
  async function reader() {
    while (next <= last) {
      const seq = next++;
      let m = null;
      for (let attempt = 0; ; attempt++) {
        try { m = await get(seq); break; }
        catch (e) {
          if (/no message found/i.test(e.message)) break;
          if (attempt > 50) fail(`${who}: get seq ${seq}: ${e.message}`);
          await sleep(100);
        }
      }
      if (!m) continue;
      const id = Number(m.string().slice(6));
      if (m.header?.get("Nats-Msg-Id") !== `m-${id}`) fail(`${who}: seq ${seq}: wrong msg id`);
      if (seen.has(id)) fail(`${who}: msg ${id} stored twice`);
      seen.set(id, seq);
      if (acked.has(id) && acked.get(id) !== seq) fail(`${who}: msg ${id} acked at ${acked.get(id)}, stored at ${seq}`);
    }
  }
  await Promise.all(Array.from({ length: 100 }, reader));
  for (const [id] of acked) if (!seen.has(id)) fail(`${who}: acknowledged msg ${id} is missing`);
  return seen.size;
}
const last = info.state.last_seq;
await readAll("through the leader", (seq) => jsm.streams.getMessage("ORDERS", { seq }), last);
if (info.state.messages !== N) fail(`${info.state.messages} messages, expected ${N}`);
console.log(`every acknowledged message exactly once through the leader (${info.cluster.leader})`);
for (const n of NAMES) {
  const c = await connect({ user: "app", pass: "js-secret", servers: `127.0.0.1:${cport[n]}`,
                            ignoreClusterUpdates: true, timeout: 5000 });
  const jm = await jetstreamManager(c);
  const k = await readAll(`replica on ${n}`, (seq) => jm.direct.getMessage("ORDERS", { seq }), last);
  await c.close();
  if (k !== N) fail(`replica on ${n}: ${k} messages, expected ${N}`);
}
console.log(`every acknowledged message exactly once on each server's own replica (direct gets)`);

// The other calls nats.js users make.
const ai = await jsm.getAccountInfo();
if (ai.streams !== 1) fail(`account info: ${ai.streams} streams`);
const names = []; for await (const n of jsm.streams.names()) names.push(n);
const list = []; for await (const s of jsm.streams.list()) list.push(s.config.name);
if (names.join() !== "ORDERS" || list.join() !== "ORDERS") fail(`names ${names} list ${list}`);
if ((await jsm.streams.find("orders.3")) !== "ORDERS") fail("find");
const dup = await js.publish("orders.1", "x", { msgID: "m-5" });
if (!dup.duplicate || dup.seq !== acked.get(5)) fail("a duplicate was not recognised");
try { await nc.request("nobody.here", "x", { timeout: 2000 }); fail("a request nobody takes was answered"); }
catch (e) { if (!/no responders/i.test(e.message)) fail(`no responders: ${e.message}`); }

// Consumers as nats.js users consume: add, get, fetch, consume, acks, info, next, nak, term,
// list, delete.
await jsm.consumers.add("ORDERS", { durable_name: "c1", ack_policy: AckPolicy.Explicit });
const c1 = await js.consumers.get("ORDERS", "c1");
const got = new Set();
function take(m) {
  const seq = m.info.streamSequence;
  if (got.has(seq)) fail(`seq ${seq} delivered twice`);
  if (m.info.deliveryCount !== 1) fail(`seq ${seq}: delivery count ${m.info.deliveryCount}`);
  if (m.info.stream !== "ORDERS" || m.info.consumer !== "c1") fail(`seq ${seq}: ${m.info.stream} > ${m.info.consumer}`);
  got.add(seq);
}
const fetched = await c1.fetch({ max_messages: 100, expires: 5000 });
for await (const m of fetched) { take(m); m.ack(); }
if (got.size !== 100) fail(`fetch gave ${got.size} messages, expected 100`);
for (let seq = 1; seq <= 100; seq++) if (!got.has(seq)) fail(`fetch skipped seq ${seq}`);
const consumed = await c1.consume({ max_messages: 200, expires: 5000 });
for await (const m of consumed) {
  take(m);
  if (got.size === N) { if (!(await m.ackAck())) fail("ackAck"); break; }
  m.ack();
}
await consumed.close();
if (got.size !== N) fail(`consume stopped at ${got.size}`);
let ci;
for (let i = 0; ; i++) {
  ci = await c1.info();
  if (ci.num_ack_pending === 0 && ci.ack_floor.stream_seq === N) break;
  if (i > 50) fail(`consumer c1: ack floor ${ci.ack_floor.stream_seq}, ${ci.num_ack_pending} ack pending`);
  await sleep(100);
}
if (ci.delivered.stream_seq !== N || ci.num_pending !== 0 || ci.config.ack_policy !== "explicit" ||
    ci.config.durable_name !== "c1" || ci.stream_name !== "ORDERS" || !ci.cluster?.leader)
  fail(`consumer info: ${JSON.stringify(ci)}`);
if ((await c1.next({ expires: 1000 })) !== null) fail("next on a drained consumer gave a message");
console.log(`consumer c1: fetched 100, consumed ${N - 100}, every seq once; info delivered ${ci.delivered.stream_seq}, ack floor ${ci.ack_floor.stream_seq}`);

// NAK and TERM on a filtered consumer.
await jsm.consumers.add("ORDERS", { durable_name: "c2", ack_policy: AckPolicy.Explicit, filter_subject: "orders.3" });
const c2 = await js.consumers.get("ORDERS", "c2");
const first = await c2.next({ expires: 5000 });
const second = await c2.next({ expires: 5000 });
if (!first || !second || first.subject !== "orders.3" || second.seq <= first.seq) fail("c2: no first messages");
// The NAK is confirmed by the ackAck that follows it (the consumer applies acks in order): the
// NAK'd message must then come back first, ahead of new ones.
first.nak();
if (!(await second.ackAck())) fail("c2: ackAck");
const again = await c2.next({ expires: 5000 });
if (!again || again.seq !== first.seq || again.info.deliveryCount !== 2) fail(`c2: the NAK was not redelivered first: ${first.seq} then ${again?.seq} (${again?.info.deliveryCount})`);
again.term();
const third = await c2.next({ expires: 5000 });
if (!third || third.seq <= second.seq) fail("c2: a terminated message came back");
third.working();
if (!(await third.ackAck())) fail("c2: ackAck after working");
const cnames = []; for await (const c of jsm.consumers.list("ORDERS")) cnames.push(c.name);
if (cnames.sort().join() !== "c1,c2") fail(`consumer list: ${cnames}`);
if (!(await jsm.consumers.delete("ORDERS", "c2"))) fail("consumer delete");
try { await jsm.consumers.info("ORDERS", "c2"); fail("a deleted consumer has info"); }
catch (e) { if (!/consumer not found/i.test(e.message)) fail(`info of a deleted consumer: ${e.message}`); }
// A wildcard filter travels in the create subject (CONSUMER.CREATE.ORDERS.w.orders.*).
const w = await jsm.consumers.add("ORDERS", { durable_name: "w", ack_policy: AckPolicy.Explicit, filter_subject: "orders.*" });
if (w.config.filter_subject !== "orders.*") fail("wildcard filter");
if (!(await jsm.consumers.delete("ORDERS", "w"))) fail("delete w");
console.log("nak, term, working, ackAck, consumer list, delete, wildcard filter: ok");

// An ordered consumer (an ephemeral one nats.js creates and replaces itself, ack none, R1).
const oc = await js.consumers.get("ORDERS");
const ordered = await oc.fetch({ max_messages: 50, expires: 5000 });
let oseq = 0;
for await (const m of ordered) {
  if (m.seq !== oseq + 1) fail(`ordered consumer: seq ${m.seq} after ${oseq}`);
  oseq = m.seq;
}
if (oseq !== 50) fail(`ordered consumer: fetched up to seq ${oseq}`);
console.log("ordered consumer: 50 in order");

if ((await jsm.streams.purge("ORDERS")).purged !== N) fail("purge");
if (!(await jsm.streams.delete("ORDERS"))) fail("delete");
console.log("account info, names, list, find, dedup, no responders, purge, delete: ok");
await nc.close();

for (const n of NAMES) procs[n].kill("SIGTERM");
const codes = await Promise.all(NAMES.map((n) => new Promise((r) => {
  if (procs[n].exitCode !== null) r(procs[n].exitCode); else procs[n].on("exit", (c) => r(c));
})));
if (codes.some((c) => c !== 0)) fail(`exit codes on SIGTERM: ${codes}`);
console.log("every server exited 0 on SIGTERM");
rmSync(base, { recursive: true, force: true });
process.exit(0);
