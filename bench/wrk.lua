-- wrk script for the benchmarks (bench/wrk.ts sets the environment).
--   BENCH_METHOD, BENCH_BODY_FILE: send this method with this file as the body;
--   BENCH_CARD_TREE (+ BENCH_CARD_PARENT): POST a new card to that tree on each request,
--     numbered so every body differs.
--   BENCH_IDEMPOTENCY_KEYS: with BENCH_CARD_TREE, each POST carries its own Idempotency-Key
--     (thread number and request number: never one key twice, so each runs; SPEC §13).
--   BENCH_TARGETS: "host:port[:tree:parent]" items separated by commas; wrk's threads are
--     dealt out to them in turn (thread 1 to the first, thread 2 to the second, ...), each
--     connecting to its own server and, when a tree is given, creating cards in that tree.
--     With -t2 and two ports, the load is spread round-robin over two processes.
-- Whatever the mode, done() prints one JSON line the runner parses, with exact percentiles.

local method = os.getenv("BENCH_METHOD")
local body_file = os.getenv("BENCH_BODY_FILE")
local targets = os.getenv("BENCH_TARGETS")
-- Globals, not locals: setup() below sets them per thread (thread:set) after this runs.
card_tree = os.getenv("BENCH_CARD_TREE")
card_parent = os.getenv("BENCH_CARD_PARENT")
local writes = card_tree ~= nil or (targets ~= nil and targets:find("^[^,]+:[^,]+:") ~= nil)

if targets then
  local dealt = 0
  setup = function(thread)
    local list = {}
    for item in targets:gmatch("[^,]+") do list[#list + 1] = item end
    dealt = dealt + 1
    local host, port, tree, parent = list[(dealt - 1) % #list + 1]:match("^([^:]+):(%d+):?([^:]*):?([^:]*)$")
    thread.addr = wrk.lookup(host, port)[1]
    if tree ~= "" then thread:set("card_tree", tree) end
    if parent ~= "" then thread:set("card_parent", parent) end
  end
end

-- Each thread's number, for keys no other thread sends (every thread counts from 1).
thread_number = 0
if os.getenv("BENCH_IDEMPOTENCY_KEYS") then
  local numbered = 0
  local deal = setup
  setup = function(thread)
    numbered = numbered + 1
    thread:set("thread_number", numbered)
    if deal then deal(thread) end
  end
end
local keyed = os.getenv("BENCH_IDEMPOTENCY_KEYS") ~= nil

if method then wrk.method = method end
if body_file then
  local f = assert(io.open(body_file, "rb"))
  wrk.body = f:read("*a")
  f:close()
end
if body_file or writes then wrk.headers["Content-Type"] = "application/json" end

local counter = 0
if writes then
  request = function()
    counter = counter + 1
    local path = "/api/trees/" .. card_tree .. "/cards"
    local parent = card_parent and ('"' .. card_parent .. '"') or "null"
    local body = string.format(
      '{"treeId":"%s","parentId":%s,"position":%d,"content":"## Bench card %d\\n\\nWritten by wrk under load."}',
      card_tree, parent, 100000 + counter, counter)
    if keyed then
      local headers = {}
      for name, value in pairs(wrk.headers) do headers[name] = value end
      headers["Idempotency-Key"] = string.format("bench-%d-%d-%d", os.time(), thread_number, counter)
      return wrk.format("POST", path, headers, body)
    end
    return wrk.format("POST", path, nil, body)
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    latency.mean, e.connect, e.read, e.write, e.status, e.timeout))
end
