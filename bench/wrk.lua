-- wrk script for the benchmarks (bench/wrk.ts sets the environment).
--   BENCH_METHOD, BENCH_BODY_FILE: send this method with this file as the body;
--   BENCH_CARD_TREE (+ BENCH_CARD_PARENT): POST a new card to that tree on each request,
--     numbered so every body differs.
-- Whatever the mode, done() prints one JSON line the runner parses, with exact percentiles.

local method = os.getenv("BENCH_METHOD")
local body_file = os.getenv("BENCH_BODY_FILE")
local card_tree = os.getenv("BENCH_CARD_TREE")
local card_parent = os.getenv("BENCH_CARD_PARENT")

if method then wrk.method = method end
if body_file then
  local f = assert(io.open(body_file, "rb"))
  wrk.body = f:read("*a")
  f:close()
end
if body_file or card_tree then wrk.headers["Content-Type"] = "application/json" end

local counter = 0
if card_tree then
  local path = "/api/trees/" .. card_tree .. "/cards"
  local parent = card_parent and ('"' .. card_parent .. '"') or "null"
  request = function()
    counter = counter + 1
    local body = string.format(
      '{"treeId":"%s","parentId":%s,"position":%d,"content":"## Bench card %d\\n\\nWritten by wrk under load."}',
      card_tree, parent, 100000 + counter, counter)
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
